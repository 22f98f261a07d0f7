"""The Lua scripts of the budgets' Redis counters (`counters.Counters`): each runs in Redis at once,
so a reservation on several holders, a settlement and a rebuild from the ledger are each atomic.

Per holder prefix P (`hermes:budgets:<who>`): `P:<day>` and `P:<month>` hashes (settled `t`, `c`,
`n`; held `ht`, `hc`; `ok` once loaded from the ledger), `P:run` (running calls by expiry),
`P:calls` (what each holds: `r` reserved or `s` settling, tokens, cost, day, month), `P:rpm` (the
last minute's requests), `P:done` and `P:donet` (calls settled in the last minute).
"""

from __future__ import annotations

__all__ = ["CONFIRM", "REBUILD", "RESERVE", "SETTLE"]

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
local function remember(P, id, e, now)  -- settled: kept a minute in `:done`, numbered in `:doneq`
  for _, old in ipairs(redis.call('ZRANGEBYSCORE', P .. ':donet', '-inf', now - 60)) do
    redis.call('HDEL', P .. ':done', old)
    redis.call('ZREM', P .. ':doneq', old)
  end
  redis.call('ZREMRANGEBYSCORE', P .. ':donet', '-inf', now - 60)
  redis.call('HSET', P .. ':done', id, 's ' .. e.t .. ' ' .. e.c .. ' ' .. e.day .. ' ' .. e.month)
  redis.call('ZADD', P .. ':donet', now, id)
  redis.call('ZADD', P .. ':doneq', redis.call('INCR', P .. ':cseq'), id)
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
RESERVE = _LIB + """
local now, tokens, cost, expires, n = num(ARGV[1]), num(ARGV[2]), num(ARGV[3]), num(ARGV[4]), num(ARGV[5])
-- run again with the same ids (the client retried after a timeout, its first run's answer lost): done already
if n > 0 and redis.call('HEXISTS', ARGV[6] .. ':calls', ARGV[7]) == 1 then return {'ok'} end
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
SETTLE = _LIB + """
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
CONFIRM = _LIB + """
local now = num(ARGV[1])
for a = 2, #ARGV, 2 do
  local P, id = ARGV[a], ARGV[a + 1]
  local e = entry(P, id)
  if e and e.s == 's' then
    drop(P, id, e)
    remember(P, id, e, now)
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
"""

# ARGV: prefix, day, month, how many calls had settled (`:cseq`) when the calls held were read, the time, the
# ledger's tokens and cost of the day, its cost of the month, its requests of the day, the number k of calls
# held when the ledger was read, those k ids, then the ids of them the ledger has.
REBUILD = _LIB + """
local P, day, month, seq, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], num(ARGV[5])
local k = num(ARGV[10])
local seen = {}
for a = 11, 10 + k do seen[ARGV[a]] = true end
for _, id in ipairs(redis.call('HKEYS', P .. ':calls')) do
  local e = entry(P, id)
  if e and e.s == 's' and not seen[id] then return 0 end  -- a settlement came in since: read again
end
-- a call reserved since the calls held were read, and settled already: the ledger read may or may not have
-- it (settled in Redis after it was written there), so read again
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. ':doneq', '(' .. seq, '+inf')) do
  if not seen[id] then return 0 end
end
local written = {}
for a = 11 + k, #ARGV do written[ARGV[a]] = true end
local xt, xc, xm, xn = 0, 0, 0, 0  -- the calls written after the ledger was read, and settled since
for a = 11, 10 + k do
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
for a = 11 + k, #ARGV do
  local e = entry(P, ARGV[a])
  if e then  -- in the ledger's totals already; remembered as settled, for a rebuild that read the ledger before
    drop(P, ARGV[a], e)
    remember(P, ARGV[a], e, now)
  end
end
local D, M = P .. ':' .. day, P .. ':' .. month
redis.call('HSET', D, 't', num(ARGV[6]) + xt, 'c', num(ARGV[7]) + xc, 'n', num(ARGV[9]) + xn, 'ok', 1)
redis.call('HSET', M, 'c', num(ARGV[8]) + xm, 'ok', 1)
redis.call('EXPIRE', D, %(day)d)
redis.call('EXPIRE', M, %(month)d)
return 1
""" % {"day": _KEEP_DAY, "month": _KEEP_MONTH}


