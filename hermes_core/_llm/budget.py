"""LLM budgets: what each plugin's `ctx.llm` (and the host's own calls) may spend, and how fast.

A budget comes from config: `plugins.entries.<id>.llm_budget`, else (key by key)
`plugins.llm_budget`, for a plugin; `model.budget` for the host's own calls, unless the host
makes them on someone's behalf (`spending_as`): an API server's named key `key:<name>` is held to
`api_server.keys.<name>.budget`. Besides that holder, a call is held to its caller's budget
(`budgets.caller`, each caller `caller:<platform>:<user>` its own: `spending_as(caller=...)`) and
to the fleet's (`budgets.fleet`, every call together): one reservation takes from all of them or
from none. Amounts (tokens and
cost per calendar day and month) are hard limits; rates (`requests_per_minute`, `max_concurrent`)
make a call wait for room or refuse it, per `on_limit`. The ledger (`ledger.Ledger`) keeps what
was spent; `gate.admit` is one call's way past its budget.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

import attrs

from .. import config_keys as keys
from .._config.config import Config
from .._errors import PluginLlmBudgetError
from .reply import _price, _priced

__all__ = ["AMOUNTS", "ANSWER_FLOOR", "Budget", "Budgets", "CALLER_HOLDER", "DENSE_RATE", "DENSE_RUN", "FLEET", "HOST",
           "IMAGE_TOKENS", "KEY_HOLDER", "MESSAGE_TOKENS", "RATES", "REPLY_TOKENS", "RESERVED_ANSWER_TOKENS",
           "answer_tokens", "budget_for", "caller_holder", "holders_of", "host_holder", "prompt_part", "prompt_tokens",
           "refused", "shown", "spending_as", "text_tokens", "worst_case"]

HOST = "host"  # who the host's own calls are, in the ledger and the audit log
KEY_HOLDER = "key:"  # an API server key's holder name starts with it
CALLER_HOLDER = "caller:"  # a caller's: caller:<platform>:<user>
FLEET = "fleet"  # every call together (budgets.fleet)
_holder: ContextVar[str | None] = ContextVar("hermes_budget_holder", default=None)
_caller: ContextVar[str | None] = ContextVar("hermes_budget_caller", default=None)


@contextlib.contextmanager
def spending_as(holder: str | None = None, *, caller: str | None = None) -> Iterator[None]:
    """The host's own model calls made inside the block (in this thread or task) count against
    `holder`'s budget instead of `model.budget`: `"key:<name>"` for an API server's named key
    (`api_server.keys.<name>.budget`); None changes nothing. `caller` (`"<platform>:<user>"`, an
    API caller's `X-Hermes-User`, a gateway sender) holds every call made in the block, the
    plugins' too, to that caller's own budget (`budgets.caller`) as well.

    >>> with spending_as("key:reports", caller="api_server:alice"):
    ...     agent.ask("summarise today's tickets")
    """
    if holder is not None and not holder.startswith(KEY_HOLDER):
        raise ValueError(f"spending_as: a budget holder is 'key:<name>' (got {holder!r})")
    if caller is not None and (not isinstance(caller, str) or not caller.strip()):
        raise ValueError(f"spending_as: a caller is '<platform>:<user>' (got {caller!r})")
    token = _holder.set(holder) if holder is not None else None
    called = _caller.set(caller) if caller is not None else None
    try:
        yield
    finally:
        if called is not None:
            _caller.reset(called)
        if token is not None:
            _holder.reset(token)


def host_holder() -> str:
    """Who the host's own calls are counted against here: `HOST`, or the holder `spending_as` set."""
    return _holder.get() or HOST


def caller_holder() -> str | None:
    """The caller every call made here is held to as well (`caller:<platform>:<user>`), or None."""
    caller = _caller.get()
    return f"{CALLER_HOLDER}{caller}" if caller else None
RESERVED_ANSWER_TOKENS = 4096  # what a call without max_tokens reserves for its answer
IMAGE_TOKENS = 2000  # what an image (or audio) part of a prompt reserves: more than providers bill for one
AMOUNTS = ("tokens_per_day", "cost_per_day", "cost_per_month")
RATES = ("requests_per_minute", "max_concurrent")


@attrs.frozen
class Budget:
    """One budget: each limit None when unset; `who` is the plugin id (or `HOST`), `where` the
    config section it came from."""

    who: str
    where: str
    tokens_per_day: int | None = None
    cost_per_day: float | None = None
    cost_per_month: float | None = None
    timezone: str = "UTC"
    requests_per_minute: int | None = None
    max_concurrent: int | None = None
    on_limit: str = "wait"

    def limits(self) -> list[tuple[str, float]]:
        """Each limit that is set, by name (amounts, then rates)."""
        return [(name, float(getattr(self, name))) for name in (*AMOUNTS, *RATES) if getattr(self, name) is not None]

    def as_dict(self) -> dict[str, Any]:
        """The limits that are set, with the time zone and `on_limit` (what `on_budget_check` is given)."""
        out: dict[str, Any] = {name: getattr(self, name) for name in (*AMOUNTS, *RATES)
                               if getattr(self, name) is not None}
        return {**out, "timezone": self.timezone, "on_limit": self.on_limit}


def budget_for(config: Config, who: str) -> Budget | None:
    """`who`'s budget (a plugin id, or `HOST` for `model.budget`); None when it sets no limit."""
    names = keys.BUDGET_NAMES
    if who == HOST:
        values = {name: config.read(keys.MODEL_BUDGET[index]) for index, name in enumerate(names, start=1)}
        where = "model.budget"
    elif who.startswith(CALLER_HOLDER) or who == FLEET:
        section = keys.CALLER_BUDGET if who != FLEET else keys.FLEET_BUDGET
        values = {name: config.read(section[index]) for index, name in enumerate(names, start=1)}
        where = section[0].name
    elif who.startswith(KEY_HOLDER):
        key = who[len(KEY_HOLDER):]
        values = {name: config.read(keys.API_KEY_BUDGET[index], key) for index, name in enumerate(names, start=1)}
        where = f"api_server.keys.{key}.budget"
    else:
        own, default = keys.PLUGIN_LLM_BUDGET, keys.PLUGINS_LLM_BUDGET
        mine = {name: config.read(own[index], who) for index, name in enumerate(names, start=1)}
        shared = {name: config.read(default[index]) for index, name in enumerate(names, start=1)}
        values = {name: shared[name] if mine[name] is None else mine[name] for name in names}
        where = (f"plugins.entries.{who}.llm_budget" if any(mine[name] is not None for name in (*AMOUNTS, *RATES))
                 else "plugins.llm_budget")
    if all(values[name] is None for name in (*AMOUNTS, *RATES)):
        return None
    return Budget(who, where, values["tokens_per_day"], values["cost_per_day"], values["cost_per_month"],
                  values["timezone"] or "UTC", values["requests_per_minute"], values["max_concurrent"],
                  values["on_limit"] or "wait")


def holders_of(config: Config, budgets: Budgets, who: str) -> list[Budget]:
    """Every budget a call of `who` is held to, `who`'s own first: its caller's (`spending_as`) and
    the fleet's, each when it sets a limit."""
    names = [who, *(name for name in (caller_holder(), FLEET) if name is not None and name != who)]
    return [budget for name in names if (budget := budgets.get(config, name)) is not None]


class Budgets:
    """`budget_for`, remembered while the config object stays the same (it is replaced when
    config.yaml changes), so that a call reads no budget key twice."""

    __slots__ = ("_config", "_found")

    def __init__(self) -> None:
        self._config: Config | None = None
        self._found: dict[str, Budget | None] = {}

    def get(self, config: Config, who: str) -> Budget | None:
        if config is not self._config or len(self._found) > 256:
            self._config, self._found = config, {}
        if who not in self._found:
            self._found[who] = budget_for(config, who)
        return self._found[who]


MESSAGE_TOKENS = 4  # what a message adds in a chat template besides its text (its role, separators)
REPLY_TOKENS = 3  # the template's start of the answer
ANSWER_FLOOR = 256  # the least a call without max_tokens reserves for its answer, after answers of the conversation


DENSE_RUN = 16  # characters without a space from which an ASCII run may be dense: base64, a hash, a key
DENSE_RATE = 0.75  # tokens a character of a dense run is counted at (real tokenizers: 0.45 to 0.72)
_DIGITS = str.maketrans("", "", "0123456789")
_SEPARATORS = str.maketrans("", "", "._/-:()[]{},;'\"=<>`*#")  # what splits identifiers, paths and prose


def _dense(run: str) -> bool:
    """Whether `run` (ASCII, no space) reads as base64, a hash or a key rather than an identifier, a
    path or a word: at least two digits, or none of the separators those have."""
    return len(run) - len(run.translate(_DIGITS)) >= 2 or len(run.translate(_SEPARATORS)) == len(run)


def text_tokens(text: str) -> int:
    """About how many tokens `text` is, with no tokenizer: a third of its characters (prose and code
    run at about four characters a token in the large providers' tokenizers, numbers at three digits),
    plus one for each character outside ASCII (CJK text runs at about a token a character), and
    `DENSE_RATE` for each character of a dense ASCII run of `DENSE_RUN` or more without a space
    (base64, hashes and keys run at 1.4 to 2 characters a token: a third counted them at half),
    never more than its bytes (no tokenizer makes a token of less than a byte). An estimate, not a
    bound: long numbers, emoji sequences and rare CJK characters can still take more, and the
    settlement counts what the provider reports (BENCHMARKS.md has the figures by kind)."""
    size = len(text)
    wide = 0 if text.isascii() else size - len(text.encode("ascii", "ignore"))
    count = -(-size // 3) + wide
    if size >= DENSE_RUN:
        dense = sum(len(run) for run in text.split() if len(run) >= DENSE_RUN and run.isascii() and _dense(run))
        count += -(-dense * 5 // 12)  # DENSE_RATE less the third already counted
    return min(len(text.encode()) if wide else size, count)


def _tokens(value: Any) -> int:
    """`text_tokens` over a JSON value (a message, a tool's schema): its keys and strings; an image or
    audio part `IMAGE_TOKENS`."""
    if isinstance(value, str):
        return text_tokens(value)
    if isinstance(value, list):
        return sum(_tokens(item) for item in value)
    if isinstance(value, Mapping):
        if value.get("type") in ("image_url", "input_image", "input_audio", "image"):
            return IMAGE_TOKENS
        return sum(text_tokens(str(key)) + _tokens(item) for key, item in value.items())
    return text_tokens(json.dumps(value, default=str)) if value is not None else 0


def prompt_tokens(messages: Any, tools: Any) -> int:
    """About how many tokens a call's prompt is: each message's text and keys (`text_tokens`) and
    `MESSAGE_TOKENS`, the tools' schemas, and `REPLY_TOKENS`."""
    items = messages if isinstance(messages, list) else [messages]
    return REPLY_TOKENS + sum(MESSAGE_TOKENS + _tokens(item) for item in items) + (_tokens(tools) if tools else 0)


def answer_tokens(messages: Any, max_tokens: int | None) -> int:
    """What a call reserves for its answer: its `max_tokens`; without one, twice the longest answer
    of the conversation so far (at least `ANSWER_FLOOR`), and `RESERVED_ANSWER_TOKENS` at most or
    when the conversation has none yet."""
    if max_tokens:
        return max_tokens
    answers = [_tokens(item.get("content")) for item in messages if isinstance(item, Mapping)
               and item.get("role") == "assistant"] if isinstance(messages, list) else []
    if not answers:
        return RESERVED_ANSWER_TOKENS
    return min(RESERVED_ANSWER_TOKENS, max(ANSWER_FLOOR, 2 * max(answers)))


def prompt_part(messages: Any, tools: Any, pricing: Mapping[str, Any], model: str) -> tuple[int, float]:
    """A call's prompt alone: its tokens (`prompt_tokens`) and their price (0 when `model` has none),
    what a call cut off once its request was sent keeps of its reservation."""
    prompt = prompt_tokens(messages, tools)
    price = _price(pricing, model) if pricing else None
    return prompt, (_priced(price, prompt, 0, 0, 0) or 0.0) if price is not None else 0.0


def worst_case(messages: Any, tools: Any, max_tokens: int | None, pricing: Mapping[str, Any],
               model: str) -> tuple[int, float | None]:
    """What a call reserves: its prompt's tokens (`prompt_tokens`) plus its answer's (`answer_tokens`),
    and their price (None when `model` has none: the caller reserves `budgets.unpriced_cost` then,
    never nothing)."""
    prompt = prompt_tokens(messages, tools)
    answer = answer_tokens(messages, max_tokens)
    price = _price(pricing, model) if pricing else None
    cost = _priced(price, prompt, answer, 0, 0) if price is not None else None
    return prompt + answer, (cost or 0.0) if price is not None else None


def shown(name: str, value: float) -> str:
    if name.startswith("cost"):
        return f"${value:.4f}"
    if name == "requests_per_minute":
        return f"{value:,.0f} requests"
    if name == "max_concurrent":
        return f"{value:,.0f} running"
    return f"{value:,.0f} tokens"


def _whose(budget: Budget) -> str:
    if budget.who == HOST:
        return "the host's own calls are at their"
    if budget.who == FLEET:
        return "the fleet (every call together) is at its"
    if budget.who.startswith(CALLER_HOLDER):
        return f"caller {budget.who[len(CALLER_HOLDER):]!r} is at their"
    if budget.who.startswith(KEY_HOLDER):
        return f"API key {budget.who[len(KEY_HOLDER):]!r} is at its"
    return f"plugin {budget.who!r} is at its"


def refused(budget: Budget, name: str, used: float, asked: float, limit: float, resets: str,
            waited: float | None = None) -> PluginLlmBudgetError:
    """The error of a call `budget` refuses at limit `name`: what is used, what is left, when it
    resets; `waited`, the seconds a rate-limited call waited before giving up (None: refused at once)."""
    head = f"{_whose(budget)} LLM budget {name} ({budget.where}.{name}): used {shown(name, used)} of " \
           f"{shown(name, limit)}"
    if name in RATES:
        when = "now" if name == "max_concurrent" else "in the last minute"
        tail = (f"no room came within the call's time limit (waited {waited:.1f} s)" if waited is not None
                else f"{budget.where}.on_limit is refuse")
        back = f"room comes back at {resets}" if resets else "room comes back when one of them ends"
        message = f"{head} {when}; {tail}; {back}"
    else:
        period = "this month" if name == "cost_per_month" else "today"
        message = (f"{head} {period}, {shown(name, max(limit - used, 0))} left, and this call may take up to "
                   f"{shown(name, asked)}; it resets at {resets}")
        if waited is not None:  # the reservations of calls running then never left it room
            message += f" (it waited {waited:.1f} s, its time limit, for the calls running to settle)"
    return PluginLlmBudgetError(message, plugin_id=budget.who, budget=name, used=used, limit=limit, resets=resets)
