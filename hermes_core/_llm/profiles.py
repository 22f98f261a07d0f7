"""A model-provider plugin's profile on the wire: its request shaping and its own client.

A route that names a registered `ProviderProfile` (Hermes' `providers.base`, a model-provider
plugin's) is sent as Hermes' runtime sends it:

- the request is shaped by the profile's hooks: `prepare_messages(messages)`, `build_extra_body(
  session_id=None, model=..., base_url=..., reasoning_config=None)` and the first half of
  `build_api_kwargs_extras(...)` merged into the body (the body is what `extra_body` reaches),
  the second half into its top level; `fixed_temperature` (`OMIT_TEMPERATURE`: none sent) and
  `get_max_tokens(model)` when the caller set no `max_tokens`;
- the client is the profile's `create_client(**client_kwargs)` when it returns one (a provider
  whose wire is not OpenAI over HTTP: an ACP subprocess, a native SDK), called with what the host
  would give `openai.OpenAI` (`api_key`, `base_url`, `default_headers`, `timeout`, `max_retries`,
  and for an external process `command` and `args`) with the profile's
  `build_client_kwargs_extras(...)` as defaults under them. `None` is the standard client; a
  raise is logged once and the standard client is used, as in Hermes.

A hook that raises is logged and left out: a plugin never takes a request down.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import threading
from typing import Any

from .._hermes import model_providers

__all__ = ["own_client", "post_own", "profile_of", "shape"]

log = logging.getLogger("hermes_core.llm")
_clients: dict[tuple[int, str, str], Any] = {}  # (id(profile), base_url, key) -> its client
_failed: set[tuple[int, str, str]] = set()
_lock = threading.Lock()


def profile_of(provider: str) -> Any | None:
    """The registered profile of `provider`, if a plugin registered one."""
    from .routes import PROVIDERS

    return None if provider in PROVIDERS else model_providers.get_provider_profile(provider)


def _hook(profile: Any, name: str, default: Any, *args: Any, **kwargs: Any) -> Any:
    method = getattr(profile, name, None)
    if not callable(method):
        return default
    try:
        return method(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a plugin's hook never takes the request down
        log.warning("model provider %r: %s() raised %s: %s; left out", getattr(profile, "name", "?"), name,
                    type(exc).__name__, exc)
        return default


def shape(provider: str, base_url: str, request: dict[str, Any]) -> dict[str, Any]:
    """`request` (a chat completion body) as `provider`'s profile shapes it (unchanged without one)."""
    profile = profile_of(provider)
    if profile is None:
        return request
    body = dict(request)
    model = body.get("model")
    messages = _hook(profile, "prepare_messages", body["messages"], list(body["messages"]))
    if isinstance(messages, list):
        body["messages"] = messages
    context = {"model": model, "base_url": base_url, "provider_preferences": None}
    extra = _hook(profile, "build_extra_body", {}, session_id=None, reasoning_config=None, **context)
    pair = _hook(profile, "build_api_kwargs_extras", ({}, {}), reasoning_config=None, **context)
    top: Any = {}
    if isinstance(pair, (tuple, list)) and len(pair) == 2:
        extra = {**(extra if isinstance(extra, dict) else {}), **(pair[0] if isinstance(pair[0], dict) else {})}
        top = pair[1]
    for added in (extra, top):
        if isinstance(added, dict):
            body.update({k: v for k, v in added.items() if k not in ("model", "messages")})
    fixed = getattr(profile, "fixed_temperature", None)
    if fixed is model_providers.OMIT_TEMPERATURE:
        body.pop("temperature", None)
    elif isinstance(fixed, (int, float)) and not isinstance(fixed, bool):
        body["temperature"] = fixed
    if "max_tokens" not in body:
        cap = _hook(profile, "get_max_tokens", None, model)
        if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
            body["max_tokens"] = cap
    return body


def _process(profile: Any) -> dict[str, Any]:
    """`command` and `args` of an external-process profile, the environment's overrides first."""
    command = next((os.environ[v] for v in getattr(profile, "process_command_env_vars", ()) or ()
                    if os.environ.get(v, "").strip()), getattr(profile, "process_command", "") or "")
    args_var = getattr(profile, "process_args_env_var", "") or ""
    args = shlex.split(os.environ[args_var]) if args_var and os.environ.get(args_var, "").strip() \
        else list(getattr(profile, "process_args", ()) or ())
    return {"command": command, "args": args} if command else {}


def overrides_create_client(profile: Any) -> bool:
    """Whether `profile`'s class has a `create_client` of its own (not the base's None)."""
    method = getattr(type(profile), "create_client", None)
    return callable(method) and method is not model_providers.ProviderProfile.create_client


def own_client(provider: str, base_url: str, key: str | None, timeout: float) -> Any | None:
    """The client `provider`'s profile makes for itself (made once per endpoint and key), or None
    for the standard one."""
    profile = profile_of(provider)
    if profile is None or not overrides_create_client(profile):
        return None
    slot = (id(profile), base_url, key or "")
    with _lock:
        if slot in _clients:
            return _clients[slot]
        if slot in _failed:
            return None
    headers = dict(getattr(profile, "default_headers", None) or {})
    given: dict[str, Any] = {"api_key": key or "", "base_url": base_url, "default_headers": headers,
                             "timeout": timeout, "max_retries": 0, **_process(profile)}
    extras = _hook(profile, "build_client_kwargs_extras", {}, base_url=base_url, provider=provider)
    kwargs = {**(extras if isinstance(extras, dict) else {}), **given}  # the profile's are defaults
    try:
        client = profile.create_client(**kwargs)
    except Exception as exc:  # noqa: BLE001 - Hermes logs it and uses the standard client
        log.warning("model provider %r: create_client() raised %s: %s; using the standard OpenAI client",
                    provider, type(exc).__name__, exc)
        client = None
    with _lock:
        if client is None:
            _failed.add(slot)
            return None
        return _clients.setdefault(slot, client)


def _plain(value: Any, depth: int = 0) -> Any:
    """`value` (an SDK model, a namespace, plain data) as JSON data."""
    if depth > 32:
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(), depth + 1)
    if hasattr(value, "__dict__"):
        return {k: _plain(v, depth + 1) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


def post_own(client: Any, request: dict[str, Any], timeout: float) -> bytes:
    """One chat completion through a profile's own client (`client.chat.completions.create`), whole
    (never streamed), as the JSON body an HTTP server would have answered."""
    import inspect

    body = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
    create = client.chat.completions.create
    try:
        takes = inspect.signature(create).parameters
        if "timeout" in takes or any(p.kind is p.VAR_KEYWORD for p in takes.values()):
            body["timeout"] = timeout
    except (TypeError, ValueError):
        pass
    completion = create(**body)
    data = _plain(completion)
    if isinstance(data, dict):
        data.setdefault("object", "chat.completion")
        data.setdefault("model", request.get("model"))
        data.setdefault("id", "chatcmpl-own")
    return json.dumps(data).encode()
