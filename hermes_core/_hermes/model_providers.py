"""Hermes' `providers` package: model-provider plugins describe an OpenAI-compatible endpoint.

A model-provider plugin builds a `ProviderProfile` (its name and aliases, base URL, the
environment variables holding its key and, optionally, a base-URL override, its models) and
calls `register_provider(profile)`, at import or from its `register(ctx)`. Under hermes-core the
profile is an LLM route: `model.provider: <name or alias>` (and `auxiliary.<task>.provider`,
`model.fallback[].provider`, a `ctx.llm` override) selects it, with the key read from the first
of its `env_vars` that is not a `*_BASE_URL` (as for every provider). A profile registered while a plugin loads belongs to that plugin: it goes
when the plugin unloads or its load fails, and `hermes plugins doctor` lists it.

>>> register_provider(ProviderProfile(name="acme", base_url="https://api.acme.test/v1",
...                                   env_vars=("ACME_API_KEY",)))
>>> get_provider_profile("acme").base_url
'https://api.acme.test/v1'
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._errors import RegistrationError
from . import names as hermes_names

__all__ = ["OMIT_TEMPERATURE", "ProviderProfile", "ProviderRoute", "forget", "get_provider_profile",
           "list_providers", "owned_by", "register_provider", "route_for"]

log = logging.getLogger("hermes_core.hermes_names")

OMIT_TEMPERATURE = object()  # a profile's `fixed_temperature` that means: send no temperature


@dataclass
class ProviderProfile:
    """An inference provider as Hermes describes it: Hermes' fields and defaults, and its hooks.
    hermes-core routes requests by `name`, `aliases`, `base_url` and `env_vars`, shapes them with
    `prepare_messages`, `build_extra_body`, `build_api_kwargs_extras`, `fixed_temperature` and
    `get_max_tokens`, and sends them through `create_client`'s client when it makes one
    (`hermes_core._llm.profiles`); the other hooks answer Hermes' defaults."""

    name: str
    api_mode: str = "chat_completions"
    aliases: tuple[str, ...] = ()
    display_name: str = ""
    description: str = ""
    signup_url: str = ""
    env_vars: tuple[str, ...] = ()
    base_url: str = ""
    models_url: str = ""
    auth_type: str = "api_key"
    supports_health_check: bool = True
    supports_vision: bool = False
    supports_vision_tool_messages: bool = True
    supports_vision_user_messages: bool = False
    supports_prompt_cache_key: bool = False
    fallback_models: tuple[str, ...] = ()
    hostname: str = ""
    default_headers: dict[str, str] = field(default_factory=dict)
    fixed_temperature: Any = None
    default_max_tokens: int | None = None
    default_aux_model: str = ""
    # Late-2026 fields (newer Hermes; kept so a published provider that passes them constructs):
    is_aggregator: bool = False
    is_routing_aggregator: bool | None = None
    hidden: bool = False
    base_url_env_var: str = ""
    supports_model_listing: bool = True
    auth_handler: Callable[[str, Any], Any] | None = None  # `hermes auth ...` first asks it (Hermes' CLI)
    refresh_credential: Callable[[Any], Any] | None = None
    classify_api_error: Callable[..., Any] | None = None
    native_reasoning_details_type: str | None = None
    process_command: str = ""
    process_args: tuple[str, ...] = ()
    process_command_env_vars: tuple[str, ...] = ()
    process_args_env_var: str = ""
    model_aliases: dict[str, str] = field(default_factory=dict)
    unsupported_response_formats: tuple[str, ...] = ()
    fallback_aux_model: str = ""
    default_vision_model_id: str = ""
    rejects_vision_input: bool = False
    model_capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)

    def get_hostname(self) -> str:
        if self.hostname or not self.base_url:
            return self.hostname
        from urllib.parse import urlparse

        return urlparse(self.base_url).hostname or ""

    def prepare_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return messages

    def build_extra_body(self, *, session_id: str | None = None, **context: Any) -> dict[str, Any]:
        return {}

    def build_api_kwargs_extras(self, *, reasoning_config: dict[str, Any] | None = None,
                                **context: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return {}, {}

    def default_vision_model(self) -> str | None:
        return None

    def get_max_tokens(self, model: str | None) -> int | None:
        return self.default_max_tokens

    def build_client_kwargs_extras(self, **context: Any) -> dict[str, Any]:
        """Keyword arguments for the client, as defaults under the host's own."""
        return {}

    def create_client(self, **client_kwargs: Any) -> Any | None:
        """A client of the provider's own (its `chat.completions.create` answers the requests), or
        None for the standard OpenAI client. `client_kwargs` is what the host would give
        `openai.OpenAI` (`api_key`, `base_url`, `default_headers`, `timeout`, `max_retries`, and
        `command`, `args` for an external process); take `**kwargs`, keys are added over time."""
        return None

    def fetch_account_usage(self, *, base_url: str | None = None, api_key: str | None = None) -> Any | None:
        return None

    def resolve_aux_model(self, *, vision: bool = False) -> str:
        return ""

    def default_reasoning_config(self, model: str | None = None) -> dict[str, Any] | None:
        return None

    def get_model_context_length(self, model: str) -> int | None:
        return None

    def get_usage_cost(self, model: str, usage: Any) -> Any | None:
        return None

    def supported_reasoning_efforts(self, model: str | None) -> tuple[str, ...] | None:
        return None

    def setup_status(self, **kwargs: Any) -> dict[str, Any] | None:
        return None

    def discover_models(self, **kwargs: Any) -> list[dict[str, Any]] | None:
        return None

    def fetch_models(self, *, api_key: str | None = None, base_url: str | None = None,
                     timeout: float = 8.0) -> list[str] | None:
        """The model ids the catalog lists, or None when that fails or the profile has none
        (`supports_model_listing` false): a `base_url` other than the profile's own is asked
        (`<base_url>/models`), else `models_url`, else `<base_url>/models`."""
        if not self.supports_model_listing:
            return None
        caller = (base_url or "").strip()
        if caller and caller.rstrip("/") != (self.base_url or "").rstrip("/"):
            url = caller.rstrip("/") + "/models"
        else:
            url = self.models_url.strip() or ((self.base_url.rstrip("/") + "/models") if self.base_url else "")
        if not url:
            return None
        import urllib.request  # only a plugin asking for its catalog pays for it

        request = urllib.request.Request(url, headers={"Accept": "application/json", **self.default_headers})
        if api_key:
            request.add_header("Authorization", f"Bearer {api_key}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the profile's own URL)
                data = json.loads(response.read().decode())
        except Exception as exc:  # noqa: BLE001 (Hermes answers None on any failure)
            log.debug("fetch_models(%s): %s", self.name, exc)
            return None
        items = data if isinstance(data, list) else data.get("data", []) if isinstance(data, dict) else []
        return [item["id"] for item in items if isinstance(item, dict) and "id" in item]


class ProviderRoute(NamedTuple):
    """What a route needs from a profile: where requests go, which variable holds the key."""

    name: str
    base_url: str
    key_env: str
    headers: dict[str, str]


_lock = threading.Lock()
_profiles: dict[str, tuple[Any, str | None]] = {}  # canonical name -> (profile, owning plugin id)
_aliases: dict[str, str] = {}


def _check(profile: Any) -> str:
    name = getattr(profile, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise RegistrationError(f"register_provider() takes a ProviderProfile with a name, not {profile!r}")
    base_url = getattr(profile, "base_url", "")
    own = callable(getattr(type(profile), "create_client", None)) and \
        getattr(type(profile), "create_client", None) is not ProviderProfile.create_client
    if not own and (not isinstance(base_url, str) or not base_url.strip()):
        raise RegistrationError(f"register_provider({name!r}): the profile has no base_url; set the "
                                "OpenAI-compatible endpoint it serves (e.g. https://api.example.com/v1), "
                                "or give its class a create_client() that makes its own client")
    return name.strip().lower()


def register_provider(profile: Any) -> None:
    """Register `profile` by name and aliases; a later registration of a name replaces it (as in
    Hermes). While a plugin loads, the profile is that plugin's."""
    name = _check(profile)
    plugin = hermes_names.loading()
    owner = plugin.plugin_id if plugin is not None else None
    with _lock:
        _profiles[name] = (profile, owner)
        for alias in getattr(profile, "aliases", ()) or ():
            _aliases[str(alias).strip().lower()] = name


def get_provider_profile(name: str) -> Any | None:
    """The profile registered under `name` or one of its aliases, or None."""
    key = str(name or "").strip().lower()
    with _lock:
        found = _profiles.get(_aliases.get(key, key))
    return found[0] if found is not None else None


def list_providers() -> list[Any]:
    """Every registered profile, once each."""
    with _lock:
        return [profile for profile, _ in _profiles.values()]


def owned_by(plugin_id: str) -> list[str]:
    """The names of the profiles `plugin_id` registered."""
    with _lock:
        return sorted(name for name, (_, owner) in _profiles.items() if owner == plugin_id)


def forget(plugin_id: str) -> None:
    """Drop the profiles `plugin_id` registered (it unloaded, or its load failed)."""
    with _lock:
        for name in [n for n, (_, owner) in _profiles.items() if owner == plugin_id]:
            del _profiles[name]
        for alias in [a for a, name in _aliases.items() if name not in _profiles]:
            del _aliases[alias]


def route_for(name: str) -> ProviderRoute | None:
    """The endpoint of the profile `name` names: its base URL (the `*_BASE_URL` among its
    `env_vars`, when set in the environment, replaces it, as in Hermes) and its key's variable."""
    import os

    profile = get_provider_profile(name)
    if profile is None:
        return None
    env_vars = [str(v) for v in getattr(profile, "env_vars", ()) or ()]
    url_vars = [v for v in env_vars if v.upper().endswith("_BASE_URL")]
    key_vars = [v for v in env_vars if v not in url_vars]
    base_url = next((os.environ[v] for v in url_vars if os.environ.get(v, "").strip()), profile.base_url) \
        or f"process://{str(profile.name).strip().lower()}"  # a client of its own, no HTTP endpoint
    headers = getattr(profile, "default_headers", None) or {}
    return ProviderRoute(str(profile.name).strip().lower(), str(base_url).strip().rstrip("/"),
                         key_vars[0] if key_vars else "", dict(headers))
