"""Where a call goes: the provider and model from config, the fallback chain, vision routing,
the time limit. The host decides all of it; a plugin sees only the answer.

    model:
      provider: openrouter          # openrouter | openai | anthropic | custom | a model-provider plugin's
      model: anthropic/claude-3-5-haiku
      base_url: ...                 # required for custom; replaces the provider's URL otherwise
      api_key_env: MY_KEY           # the variable holding the key (default: the provider's own)
      supports_vision: false        # this model is text-only: images go to auxiliary.vision
      tool_choice: auto             # sent with tools: auto | required | none | omit (unset: agent.tool_choice)
      null_tool_call_content: false # true: `content: null` (not "") beside tool calls, for a server that needs it
      stream: true                  # false: never ask this server to stream the agent's answers
      fallback:                     # tried in order on 429, 5xx, connection errors, timeouts
        - {provider: openai, model: gpt-4o-mini}
        - {provider: custom, model: llama3, base_url: "http://127.0.0.1:8080/v1"}
      pricing:                      # USD per million tokens, when the provider reports no cost
        gpt-4o-mini: {input: 0.15, output: 0.60, cache_read: 0.075}
    auxiliary:
      timeout: 30                   # seconds, for every auxiliary call
      plugin_llm: {timeout: 20, retry_after_cap: 10}
      vision: {provider: openai, model: gpt-4o-mini}
      compression: {model: gpt-4o-mini, timeout: 60}   # the host's own side tasks; unset: the main model
    agents:                         # other agents' models, for plugins granted agent_id
      reviewer: {model: {provider: openai, model: gpt-4o}}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .. import config_keys as keys
from .._config.config import Config
from .._errors import ConfigError, LlmConfigError, PluginLlmInputError
from .._hermes import model_providers
from .._messages import Messages

__all__ = ["PROVIDERS", "Plan", "Plans", "Route", "plan_auxiliary", "plan_call", "timeout_for", "tool_call_content"]

# provider id -> (default base URL, environment variable holding its key)
PROVIDERS: dict[str, tuple[str | None, str]] = {
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
    "custom": (None, "OPENAI_API_KEY"),
}



@attrs.frozen
class Route:
    """One provider and model to try: where it is and which variable names its key.
    Holds no credential; `key_env` is a variable's name, not its value."""

    provider: str
    model: str
    base_url: str
    key_env: str
    supports_vision: bool = True
    where: str = "model"
    tool_choice: str = ""  # "" until `plan_call` fills in `agent.tool_choice`
    null_tool_call_content: bool = False
    stream: bool = True  # the agent's answers may be streamed from this server

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def needs_key(self) -> bool:
        """A `custom` server may need no key at all, nor a model-provider plugin's profile that names
        no key variable; the hosted providers always do."""
        return self.provider != "custom" and bool(self.key_env)


@attrs.frozen
class Plan:
    """The routes to try in order, for which agent, with the time limits."""

    routes: tuple[Route, ...]
    agent_id: str
    timeout: float
    retry_after_cap: float
    pricing: Mapping[str, Any]


class Plans:
    """The plans made under one config, kept as long as it is the config (at most 64); a plan with a
    route on a provider profile is never kept (its URL may be read from the environment)."""

    def __init__(self) -> None:
        self._state: tuple[Config | None, dict[tuple[Any, ...], Plan]] = (None, {})

    def get(self, config: Config, key: tuple[Any, ...], make: Callable[[], Plan]) -> Plan:
        """The plan kept for `key` under `config`, else `make()`'s (kept when it can be)."""
        state = self._state  # one read: a plan lands only with the config it was made under, whatever other threads do
        if state[0] is not config or len(state[1]) > 64:
            state = self._state = (config, {})
        kept = state[1]
        plan = kept.get(key)
        if plan is None:
            plan = make()
            if all(route.provider in PROVIDERS for route in plan.routes):
                kept[key] = plan
        return plan


def _route(entry: Mapping[str, Any], where: str, *, provider: str | None = None, model: str | None = None) -> Route:
    provider = provider if provider is not None else entry.get("provider")
    model = model if model is not None else entry.get("model")
    if not isinstance(provider, str) or not provider.strip():
        raise LlmConfigError(
            f"{where}.provider is not set; set it in config.yaml to one of: {', '.join(PROVIDERS)}"
        )
    provider = provider.strip().lower()
    profile = model_providers.route_for(provider) if provider not in PROVIDERS else None
    if provider not in PROVIDERS and profile is None:
        known = [*PROVIDERS, *(p.name for p in model_providers.list_providers())]
        raise LlmConfigError(
            f"{where}.provider is {provider!r}, which is not a known provider (known: {', '.join(known)}); "
            "a model-provider plugin's provider is known once the plugin is enabled in plugins.enabled"
        )
    if not isinstance(model, str) or not model.strip():
        raise LlmConfigError(f"{where}.model is not set; set it in config.yaml to the model {provider} should run")
    if profile is not None:
        provider = profile.name
    default_url, default_env = PROVIDERS[provider] if profile is None else (profile.base_url, profile.key_env)
    # base_url, api_key_env and supports_vision describe the configured provider and model,
    # not one a plugin chose instead.
    own = str(entry.get("provider") or "").strip().lower() == provider
    base_url = (entry.get("base_url") if own else None) or default_url
    if not isinstance(base_url, str) or not base_url.strip():
        raise LlmConfigError(f"{where}.base_url is required for provider 'custom' (the server's URL, ending in /v1)")
    key_env = (entry.get("api_key_env") if own else None) or default_env
    if not isinstance(key_env, str):
        raise LlmConfigError(f"{where}.api_key_env must be the name of an environment variable, not {key_env!r}")
    vision = entry.get("supports_vision", True) if own and entry.get("model") == model else True
    choice = entry.get("tool_choice") if own else None
    if choice is not None and choice not in keys.TOOL_CHOICES:
        raise LlmConfigError(f"{where}.tool_choice is {choice!r}; it must be one of: {', '.join(keys.TOOL_CHOICES)}")
    null_content = entry.get("null_tool_call_content", False) if own else False
    if not isinstance(null_content, bool):
        raise LlmConfigError(f"{where}.null_tool_call_content must be true or false, not {null_content!r}")
    stream = entry.get("stream", True) if own else True
    if not isinstance(stream, bool):
        raise LlmConfigError(f"{where}.stream must be true or false, not {stream!r}")
    return Route(provider, model.strip(), base_url.strip().rstrip("/"), key_env, vision is not False, where,
                 choice or "", null_content, stream)


def _mapping(config: Config, *parts: str) -> Mapping[str, Any]:
    try:
        return config.section(*parts)
    except ConfigError as exc:
        raise LlmConfigError(str(exc)) from None


def timeout_for(config: Config, timeout: float | None, task: str = "plugin_llm") -> float:
    """`timeout=` → `auxiliary.<task>.timeout` → `auxiliary.timeout` → 30 s."""
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise PluginLlmInputError(f"timeout must be a positive number of seconds, not {timeout!r}")
        return float(timeout)
    try:
        return config.read(keys.AUXILIARY_TASK_TIMEOUT, task) or config.read(keys.AUXILIARY_TIMEOUT) \
            or keys.AUXILIARY_TIMEOUT.default
    except ConfigError as exc:
        raise LlmConfigError(str(exc)) from None


def _cap(config: Config) -> float:
    try:
        return config.read(keys.RETRY_AFTER_CAP)
    except ConfigError as exc:
        raise LlmConfigError(str(exc)) from None


def plan_auxiliary(config: Config, task: str, timeout: float | None) -> Plan:
    """The routes of one of the host's own side tasks (`compression`, ...): `auxiliary.<task>`
    when it names a model (on the main provider unless it names another), then the main
    model and its fallback chain."""
    main = _mapping(config, "model")
    section = _mapping(config, "auxiliary", task)
    routes: list[Route] = []
    if section.get("model") or section.get("provider"):
        inherited = {k: main[k] for k in ("provider", "model", "base_url", "api_key_env") if k in main}
        if section.get("provider") and section.get("provider") != main.get("provider"):
            inherited = {}
        routes.append(_route({**inherited, **section}, f"auxiliary.{task}"))
    routes += plan_call(config, provider=None, model=None, agent_id=None, images=False, timeout=timeout).routes
    unique = list({(r.provider, r.model, r.base_url): r for r in reversed(routes)}.values())[::-1]
    pricing = main.get("pricing") or {}
    return Plan(tuple(unique), "default", timeout_for(config, timeout, task), _cap(config),
                pricing if isinstance(pricing, Mapping) else {})


def plan_call(
    config: Config,
    *,
    provider: str | None,
    model: str | None,
    agent_id: str | None,
    images: bool,
    timeout: float | None,
) -> Plan:
    """The routes for one call: the main model (or the overrides), then `model.fallback`;
    image input to a text-only model goes to `auxiliary.vision` instead."""
    if agent_id is not None:
        agents = _mapping(config, "agents")
        if agent_id not in agents:
            known = ", ".join(sorted(map(str, agents))) or "none"
            raise LlmConfigError(f"agent {agent_id!r} is not configured under agents: in config.yaml (configured: {known})")
        section, where = _mapping(config, "agents", agent_id, "model"), f"agents.{agent_id}.model"
    else:
        section, where = _mapping(config, "model"), "model"
    first = _route(section, where, provider=provider, model=model)
    fallback = section.get("fallback") or []
    if not isinstance(fallback, list):
        raise LlmConfigError(f"{where}.fallback must be a list of {{provider, model}} entries, not {fallback!r}")
    routes = [first]
    for index, entry in enumerate(fallback):
        if not isinstance(entry, Mapping):
            raise LlmConfigError(f"{where}.fallback[{index}] must be a mapping with provider and model, not {entry!r}")
        routes.append(_route(entry, f"{where}.fallback[{index}]"))
    if images:
        routes = [route for route in routes if route.supports_vision]
        if not routes or not first.supports_vision:
            vision = _mapping(config, "auxiliary", "vision")
            if not vision:
                raise LlmConfigError(
                    f"the input has images, but {first.label} is text-only ({where}.supports_vision: false) and no "
                    "vision model is configured; set auxiliary.vision.provider and auxiliary.vision.model"
                )
            routes = [_route(vision, "auxiliary.vision")]
    try:
        default_choice = config.read(keys.AGENT_TOOL_CHOICE)
    except ConfigError as exc:
        raise LlmConfigError(str(exc)) from None
    routes = [route if route.tool_choice else attrs.evolve(route, tool_choice=default_choice) for route in routes]
    pricing = section.get("pricing") or _mapping(config, "model").get("pricing") or {}
    return Plan(tuple(routes), agent_id or "default", timeout_for(config, timeout), _cap(config),
                pricing if isinstance(pricing, Mapping) else {})


def tool_call_content(messages: Messages, route: Route) -> Messages:
    """`messages` with each assistant message's missing or null content sent as "" (servers such
    as llama.cpp's answer 500 to null), or as null beside tool calls where the route says
    `null_tool_call_content` (a server that wants that)."""
    out: Messages | None = None
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or message.get("content") not in (None, ""):
            continue
        wanted = None if route.null_tool_call_content and message.get("tool_calls") else ""
        if "content" in message and (message["content"] is None) == (wanted is None):
            continue
        if out is None:
            out = list(messages)
        out[index] = {**message, "content": wanted}
    return messages if out is None else out
