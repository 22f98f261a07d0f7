"""The budgets' hot counters in Redis (`state.redis_url` or `HERMES_REDIS_URL`), the ledger staying the truth.

A call reserves on every holder it has in one Lua script (all of them or none), so a reservation is
one round trip to Redis instead of two to PostgreSQL. Per holder Redis keeps its day's and month's
settled totals (loaded from the ledger), what the calls running now hold (`ht`, `hc`), and each
running call (`:run`, by expiry; `:calls`, what it holds). A settlement first turns the call's
reservation into what it used (still held), then writes the call to the ledger (by its own id, so
that writing it twice counts it once), then moves it from held to settled. A call whose ledger
write is not confirmed (its host was killed) expires with its lease, as a reservation does.

The counters are rebuilt from the ledger when they are missing (Redis restarted, a new day) and
every `RECONCILE_EVERY` seconds a holder is used, so they never drift for long; the rebuild takes
off what the calls still held have already written to the ledger, so nothing is counted twice. A
refusal is checked against the ledger first: counters above the truth never refuse a call. Redis
out of reach: the ledger's own reservations are used (PostgreSQL's row checks), and Redis is tried
again a second later. The scripts name keys they build themselves: a single Redis server (or a
primary with replicas), not a Redis Cluster.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import config_keys as keys
from .._errors import ConfigError, MemoryStoreError
from .budget import AMOUNTS, Budget, refused
from .holds import Busy, Hold, Reservation, _iso, _periods, now
from .ledger import _PRUNE_EVERY, Ledger

__all__ = ["ENV", "Counters", "redis_url"]

ENV = "HERMES_REDIS_URL"
PREFIX = "hermes:budgets:"
RECONCILE_EVERY = 2.0  # seconds between two rebuilds of a holder's counters from the ledger, per process
RETRY_AFTER = 1.0  # seconds Redis is left alone after it could not be reached
_KEEP_DAY, _KEEP_MONTH = 3 * 86400, 40 * 86400  # how long a period's counters outlive their last use

_LIB = """
local function num(x) return tonumber(x) or 0 end
local function entry(P, id)
  local e = redis.call('HGET', P .. ':calls', id)
  if not e then return nil end
  local s, t, c, day, month = string.match(e, '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
  return {s = s, t = num(t), c = num(c), day = day, month = month}
end
local function hold(P, e, sign)
  redis.call('HINCRBYFLOAT', P .. ':' .. e.day, 'ht', sign * e.t)
  redis.call('HINCRBYFLOAT', P .. ':' .. e.day, 'hc', sign * e.c)
  redis.call('HINCRBYFLOAT', P .. ':' .. e.month, 'hc', sign * e.c)
end
local function drop(P, id, e)
  hold(P, e, -1)
  redis.call('HDEL', P .. ':calls', id)
  redis.call('ZREM', P .. ':run', id)
end
local function purge(P, now)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. ':run', '-inf', now)) do
    local e = entry(P, id)
    if e then drop(P, id, e) else redis.call('ZREM', P .. ':run', id) end
  end
  redis.call('ZREMRANGEBYSCORE', P .. ':rpm', '-inf', now - 60)
end
"""

# ARGV: now, tokens, cost, expires, n; per holder: prefix, id, day, month, tokens_per_day, cost_per_day,
# cost_per_month, requests_per_minute, max_concurrent (limits '' when unset).
_RESERVE = _LIB + """
local now, tokens, cost, expires, n = num(ARGV[1]), num(ARGV[2]), num(ARGV[3]), num(ARGV[4]), num(ARGV[5])
for i = 0, n - 1 do
  local a = 6 + i * 9
  local P, day, month = ARGV[a], ARGV[a + 2], ARGV[a + 3]
  purge(P, now)
  local D, M = P .. ':' .. day, P .. ':' .. month
  if redis.call('HEXISTS', D, 'ok') == 0 or redis.call('HEXISTS', M, 'ok') == 0 then return {'load', i} end
  local d, m = redis.call('HMGET', D, 't', 'c', 'ht', 'hc'), redis.call('HMGET', M, 'c', 'hc')
  local spent = {num(d[1]), num(d[2]), num(m[1])}
  local used = {spent[1] + num(d[3]), spent[2] + num(d[4]), spent[3] + num(m[2])}
  local asked = {tokens, cost, cost}
  local names = {'tokens_per_day', 'cost_per_day', 'cost_per_month'}
  for k = 1, 3 do
    local limit = tonumber(ARGV[a + 3 + k])
    if limit and used[k] + asked[k] > limit then
      if spent[k] + asked[k] > limit then return {'refused', i, names[k], tostring(spent[k])} end
      return {'busy', i, names[k], tostring(used[k]), '-1', '1'}
    end
  end
  local rpm, running = tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8])
  if rpm then
    local count = redis.call('ZCARD', P .. ':rpm')
    if count + 1 > rpm then
      if rpm < 1 then return {'busy', i, 'requests_per_minute', tostring(count), 'inf', '0'} end
      local oldest = redis.call('ZRANGE', P .. ':rpm', count - rpm, count - rpm, 'WITHSCORES')
      return {'busy', i, 'requests_per_minute', tostring(count), tostring(math.max(num(oldest[2]) + 60 - now, 0.001)), '0'}
    end
  end
  if running then
    local count = redis.call('ZCARD', P .. ':run')
    if count + 1 > running then
      return {'busy', i, 'max_concurrent', tostring(count), running < 1 and 'inf' or '-1', '0'}
    end
  end
end
for i = 0, n - 1 do
  local a = 6 + i * 9
  local P, id, day, month = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local e = {t = tokens, c = cost, day = day, month = month}
  hold(P, e, 1)
  redis.call('HSET', P .. ':calls', id, 'r ' .. tokens .. ' ' .. cost .. ' ' .. day .. ' ' .. month)
  redis.call('ZADD', P .. ':run', expires, id)
  redis.call('ZADD', P .. ':rpm', now, id)
  redis.call('EXPIRE', P .. ':' .. day, %(day)d)
  redis.call('EXPIRE', P .. ':' .. month, %(month)d)
end
return {'ok'}
""" % {"day": _KEEP_DAY, "month": _KEEP_MONTH}

# ARGV: tokens, cost, then a (prefix, id) pair per holder: each reservation becomes what the call used, still held.
_SETTLE = _LIB + """
local tokens, cost, found = num(ARGV[1]), num(ARGV[2]), 0
for a = 3, #ARGV, 2 do
  local P, id = ARGV[a], ARGV[a + 1]
  local e = entry(P, id)
  if e and e.s == 'r' then
    hold(P, e, -1)
    e.t, e.c = tokens, cost
    hold(P, e, 1)
    redis.call('HSET', P .. ':calls', id, 's ' .. tokens .. ' ' .. cost .. ' ' .. e.day .. ' ' .. e.month)
    found = found + 1
  end
end
return found
"""

# ARGV: the time, then (prefix, id) pairs: each call written to the ledger moves from held to settled, and is
# remembered a while as settled (`:done`), for a rebuild that read the ledger just before it was written.
_CONFIRM = _LIB + """
local now = num(ARGV[1])
for a = 2, #ARGV, 2 do
  local P, id = ARGV[a], ARGV[a + 1]
  local e = entry(P, id)
  if e and e.s == 's' then
    drop(P, id, e)
    for _, old in ipairs(redis.call('ZRANGEBYSCORE', P .. ':donet', '-inf', now - %(done)d)) do
      redis.call('HDEL', P .. ':done', old)
    end
    redis.call('ZREMRANGEBYSCORE', P .. ':donet', '-inf', now - %(done)d)
    redis.call('HSET', P .. ':done', id, 's ' .. e.t .. ' ' .. e.c .. ' ' .. e.day .. ' ' .. e.month)
    redis.call('ZADD', P .. ':donet', now, id)
    local D, M = P .. ':' .. e.day, P .. ':' .. e.month
    if redis.call('HEXISTS', D, 'ok') == 1 then
      redis.call('HINCRBYFLOAT', D, 't', e.t)
      redis.call('HINCRBYFLOAT', D, 'c', e.c)
      redis.call('HINCRBY', D, 'n', 1)
    end
    if redis.call('HEXISTS', M, 'ok') == 1 then redis.call('HINCRBYFLOAT', M, 'c', e.c) end
  end
end
return 1
""" % {"done": 60}

# ARGV: prefix, day, month, the ledger's tokens and cost of the day, its cost of the month, its requests of the
# day, the number k of calls held when the ledger was read, those k ids, then the ids of them the ledger has.
_REBUILD = _LIB + """
local P, day, month = ARGV[1], ARGV[2], ARGV[3]
local k = num(ARGV[8])
local seen = {}
for a = 9, 8 + k do seen[ARGV[a]] = true end
for _, id in ipairs(redis.call('HKEYS', P .. ':calls')) do
  local e = entry(P, id)
  if e and e.s == 's' and not seen[id] then return 0 end  -- a settlement came in since: read again
end
local written = {}
for a = 9 + k, #ARGV do written[ARGV[a]] = true end
local xt, xc, xm, xn = 0, 0, 0, 0  -- the calls written after the ledger was read, and settled since
for a = 9, 8 + k do
  local id = ARGV[a]
  if not written[id] and redis.call('HEXISTS', P .. ':calls', id) == 0 then
    local e = nil
    local found = redis.call('HGET', P .. ':done', id)
    if found then
      local s, t, c, d, m = string.match(found, '^(%%S+) (%%S+) (%%S+) (%%S+) (%%S+)$')
      e = {t = num(t), c = num(c), day = d, month = m}
    end
    if e and e.day == day then xt, xc, xn = xt + e.t, xc + e.c, xn + 1 end
    if e and e.month == month then xm = xm + e.c end
  end  -- otherwise it expired, unsettled
end
for a = 9 + k, #ARGV do
  local e = entry(P, ARGV[a])
  if e then drop(P, ARGV[a], e) end  -- in the ledger's totals already
end
local D, M = P .. ':' .. day, P .. ':' .. month
redis.call('HSET', D, 't', num(ARGV[4]) + xt, 'c', num(ARGV[5]) + xc, 'n', num(ARGV[7]) + xn, 'ok', 1)
redis.call('HSET', M, 'c', num(ARGV[6]) + xm, 'ok', 1)
redis.call('EXPIRE', D, %(day)d)
redis.call('EXPIRE', M, %(month)d)
return 1
""" % {"day": _KEEP_DAY, "month": _KEEP_MONTH}


def redis_url(home: Path | None) -> str | None:
    """`HERMES_REDIS_URL`, else `state.redis_url` in `home`'s config.yaml; None when neither is set."""
    raw = os.environ.get(ENV)
    if not raw:
        from .._config.file import load_config

        raw = load_config(home).read(keys.STATE_REDIS_URL)
    if not raw:
        return None
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"{ENV if os.environ.get(ENV) else 'state.redis_url'} must be a redis:// URL "
                          f"(got {_masked(raw)!r}); leave it out to keep the budgets' counters in the ledger")
    return raw


def _masked(url: str) -> str:
    import re

    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url, count=1)


class Counters:
    """One process's way to the fleet's counters in Redis at `url`, over `ledger` (the truth)."""

    def __init__(self, url: str, ledger: Ledger) -> None:
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise ConfigError("state.redis_url is set but redis-py is not installed: pip install "
                              "'hermes-core[redis]' (or leave state.redis_url out)") from None
        self.url, self.location, self.ledger = url, _masked(url), ledger
        self._errors = (redis.RedisError, OSError)
        self._client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0,
                                            retry=Retry(NoBackoff(), 1),
                                            retry_on_error=[redis.ConnectionError, redis.TimeoutError])
        self._reserve = self._client.register_script(_RESERVE)
        self._settle = self._client.register_script(_SETTLE)
        self._confirm = self._client.register_script(_CONFIRM)
        self._rebuild = self._client.register_script(_REBUILD)
        self._down_until = 0.0
        self._rebuilt: dict[tuple[str, str], float] = {}  # (holder, day) -> when its counters were last rebuilt

    @property
    def up(self) -> bool:
        """False for `RETRY_AFTER` seconds after Redis could not be reached."""
        return time.monotonic() >= self._down_until

    def _failed(self) -> None:
        self._down_until = time.monotonic() + RETRY_AFTER

    # -- reserving -------------------------------------------------------------------------------

    def reserve(self, budgets: Sequence[Budget], tokens: int, cost: float, lease: float) -> Reservation | Busy | None:
        """The call's reservation on every holder of `budgets` (or `Busy`, or the refusal raised, as
        `Ledger.reserving` answers); None when Redis cannot be reached (use the ledger)."""
        if not self.up:
            return None
        moment = now()
        periods = [_periods(moment, budget.timezone) for budget in budgets]
        try:
            for budget, found in zip(budgets, periods):
                if time.monotonic() - self._rebuilt.get((budget.who, found[0]), float("-inf")) >= RECONCILE_EVERY:
                    self.rebuild(budget, found)
            for _ in range(3):
                base = -secrets.randbits(62) - len(budgets)
                holds = [Hold(base + index, budget.who, found[0], found[1], moment)
                         for index, (budget, found) in enumerate(zip(budgets, periods))]
                args: list[Any] = [moment, tokens, cost, moment + lease, len(budgets)]
                for budget, hold in zip(budgets, holds):
                    args += [PREFIX + budget.who, hold.id, hold.day, hold.month,
                             *("" if (value := getattr(budget, name)) is None else value
                               for name in (*AMOUNTS, "requests_per_minute", "max_concurrent"))]
                answer = [item.decode() if isinstance(item, bytes) else item for item in self._reserve(args=args)]
                if answer[0] == "ok":
                    return Reservation(tuple(holds), counted=True)
                budget, found = budgets[int(answer[1])], periods[int(answer[1])]
                if answer[0] == "load":
                    self.rebuild(budget, found)
                    continue
                if answer[0] == "refused":  # checked against the truth first: stale counters never refuse
                    if self.rebuild(budget, found):
                        continue
                    name = answer[2]
                    asked = tokens if name == "tokens_per_day" else cost
                    raise refused(budget, name, float(answer[3]), asked, float(getattr(budget, name)),
                                  found[3] if name == "cost_per_month" else found[2])
                return self._busy(budget, found, answer, tokens, cost)
            return None  # the counters would not settle down: the ledger decides this once
        except self._errors:
            self._failed()
            return None

    def _busy(self, budget: Budget, found: tuple[str, str, str, str], answer: list[Any], tokens: int,
              cost: float) -> Busy:
        name, used, retry, reserved = answer[2], float(answer[3]), float(answer[4]), answer[5] == "1"
        limit = float(getattr(budget, name))
        if reserved:
            return Busy(budget, name, used, limit, None, found[3] if name == "cost_per_month" else found[2],
                        reserved=True, asked=tokens if name == "tokens_per_day" else cost)
        if name == "requests_per_minute" and retry > 0 and retry != float("inf"):
            return Busy(budget, name, used, limit, retry, _iso(now() + retry, budget.timezone))
        return Busy(budget, name, used, limit, None if retry < 0 else retry, "")

    def rebuild(self, budget: Budget, periods: tuple[str, str, str, str]) -> bool:
        """`budget`'s holder's counters of its day and month set to the ledger's: whether they changed
        by more than a rounding (a refusal read from counters above the truth is then tried again).
        A ledger out of reach leaves counters that are there as they are."""
        who, (day, month) = budget.who, periods[:2]
        prefix = PREFIX + who
        self._rebuilt[(who, day)] = time.monotonic()
        for _ in range(5):
            held = [item.decode() for item in self._client.hkeys(prefix + ":calls")]
            before = self._client.hmget(prefix + ":" + day, "t", "c")
            try:
                figures, written = self._truth(who, day, month, held)
            except MemoryStoreError:
                if self._client.hexists(prefix + ":" + day, "ok") and self._client.hexists(prefix + ":" + month, "ok"):
                    return False  # Redis carries on alone until the ledger is back
                raise
            if self._rebuild(args=[prefix, day, month, *figures, len(held), *held, *written]):
                if now() - self.ledger._pruned.get(who, float("-inf")) >= _PRUNE_EVERY:  # the ledger's old calls
                    self.ledger.write(lambda db: self.ledger._prune(db, [budget], now()))
                tokens, cost = (float(value or 0) for value in before)
                return abs(tokens - figures[0]) > 0.5 or abs(cost - float(figures[1])) > 1e-9
        return False

    def _truth(self, who: str, day: str, month: str, held: list[str]) -> tuple[list[Any], list[str]]:
        """The ledger's totals of `who`'s day and month, and which of the calls `held` it has: in one
        statement, so one snapshot (a settlement committed between two reads would count once too few)."""
        ledger = self.ledger
        sql = f"SELECT period, tokens, cost, requests FROM {ledger.totals} WHERE who = ? AND period IN (?, ?)"
        params: list[Any] = [who, day, month]
        if held:
            sql += (f" UNION ALL SELECT CAST(id AS TEXT), 0, 0, -1 FROM {ledger.calls} WHERE id IN "
                    f"({', '.join('?' * len(held))})")
            params += [int(ident) for ident in held]
        with ledger._reading() as db:
            found = [] if db is None else db.execute(sql, params).fetchall()
        rows = {str(period): (int(tokens), float(cost), int(requests)) for period, tokens, cost, requests in found
                if requests != -1}
        written = [str(row[0]) for row in found if row[3] == -1]
        d, m = rows.get(day, (0, 0.0, 0)), rows.get(month, (0, 0.0, 0))
        return [d[0], repr(d[1]), repr(m[1]), d[2]], written

    # -- settling --------------------------------------------------------------------------------

    def settle(self, reservation: Reservation, tokens: int, cost: float) -> None:
        """The call's usage in place of its reservation: in Redis (still held), in the ledger (the
        truth; kept for the next write when it is out of reach), then settled in Redis."""
        pairs = [value for hold in reservation.holds for value in (PREFIX + hold.who, hold.id)]
        counted = True
        try:
            self._settle(args=[tokens, cost, *pairs])
        except self._errors:
            self._failed()
            counted = False  # the next rebuild counts it from the ledger
        op = self.ledger.settling(reservation, tokens, cost)
        try:
            self.ledger.write(op)
        except MemoryStoreError:
            self.ledger.later(op)
            return  # held in Redis until its lease ends; counted once the ledger has it
        if counted:
            try:
                self._confirm(args=[time.time(), *pairs])
            except self._errors:
                self._failed()

    def close(self) -> None:
        self._client.close()
