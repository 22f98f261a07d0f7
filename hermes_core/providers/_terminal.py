"""`TerminalEnvironmentProvider`: a terminal execution backend, and the checks of its config schema."""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from typing import Any

from ._base import ProviderBase

__all__ = ["TerminalEnvironmentProvider"]

_CONFIG_KEY_PART = re.compile(r"^[A-Za-z0-9_-]+$")
_UNSAFE_KEY_PARTS = frozenset({"__proto__", "constructor", "prototype"})
_FIELD_TYPES = frozenset({"boolean", "list", "number", "secret", "select", "string", "text"})
_VALUE_METADATA = frozenset({"const", "default", "example", "examples", "options", "value"})


class TerminalEnvironmentProvider(ProviderBase):
    """A terminal execution backend (`terminal_environment.provider`): `create_environment`
    returns an object with `execute(command, timeout=None, ...)` giving `{"output", "exit_code"}`
    and `cleanup()`."""

    is_remote: bool = True
    is_container: bool = True
    session_isolated_when_nonpersistent: bool = False

    @property
    def description(self) -> str:
        return f"Run commands in a {self.display_name} environment."

    @property
    def skip_container_guards(self) -> bool:
        return self.is_container

    @property
    def cache_path_base(self) -> str | None:
        return None

    @property
    def strip_env_keys(self) -> frozenset[str]:
        return frozenset()

    @property
    def env_description(self) -> str:
        return f"a {self.display_name} environment (likely Linux)"

    @abc.abstractmethod
    def is_available(self) -> bool:
        """A cheap check; never the network."""

    def check_requirements(self, config: dict[str, Any]) -> bool:
        return self.is_available()

    def probe(self) -> tuple[str, str]:
        """`(status, detail)`: `ready`, `needs_setup` or `unavailable`; never raises."""
        return ("ready", "") if self.is_available() else ("needs_setup", f"{self.display_name} is not configured.")

    def probe_with_config(self, config: Mapping[str, Any]) -> tuple[str, str]:
        return self.probe()

    def setup_instructions(self) -> list[str]:
        return []

    def post_setup(self) -> None:
        """An interactive step after the backend is chosen; nothing by default."""

    def doctor_checks(self) -> list[tuple[bool, str, str]]:
        try:
            ok = bool(self.is_available())
        except Exception:  # noqa: BLE001 - a raising check means unavailable
            ok = False
        detail = "(configured)" if ok else "(not configured — see setup instructions)"
        return [(ok, f"{self.display_name} backend", detail)]

    def get_config_schema(self) -> dict[str, dict[str, Any]]:
        """The fields of `terminal.backends.<name>`: `{key: {"type", "description", ...}}`."""
        return {}

    def validated_config_schema(self) -> dict[str, dict[str, Any]]:
        """`get_config_schema()` checked (safe dotted keys, known field types, no value on a
        secret, JSON values only) and copied; `TypeError` / `ValueError` say what is wrong."""
        import copy
        import json

        raw = self.get_config_schema()
        if not isinstance(raw, dict):
            raise TypeError("terminal provider config schema must be a mapping")
        checked: dict[str, dict[str, Any]] = {}
        for key, field in raw.items():
            if not isinstance(key, str) or not key:
                raise TypeError("terminal provider config schema keys must be non-empty strings")
            if any(not _CONFIG_KEY_PART.match(p) or p in _UNSAFE_KEY_PARTS for p in key.split(".")):
                raise ValueError(f"terminal provider config schema key {key!r} is unsafe")
            if not isinstance(field, dict) or not all(isinstance(k, str) for k in field):
                raise TypeError(f"terminal provider config schema entry {key!r} must be a mapping with string keys")
            entry = copy.deepcopy(field)
            entry["type"] = kind = entry.get("type", "string")
            if kind not in _FIELD_TYPES:
                raise ValueError(f"terminal provider config schema entry {key!r} has unsupported type {kind!r}")
            if kind == "secret" and _VALUE_METADATA & entry.keys():
                raise ValueError(f"secret config schema entry {key!r} cannot include value-bearing metadata: "
                                 + ", ".join(sorted(_VALUE_METADATA & entry.keys())))
            options = entry.get("options")
            if kind == "select" and (not isinstance(options, list) or not all(isinstance(o, str) for o in options)):
                raise TypeError(f"terminal provider config schema entry {key!r} options must be a list of strings")
            try:
                json.dumps(entry, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"terminal provider config schema entry {key!r} must be JSON-serializable") from exc
            checked[key] = entry
        return checked

    def resolve_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        import copy

        return copy.deepcopy(dict(config))

    def validated_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        import copy

        resolved = self.resolve_config(copy.deepcopy(dict(config)))
        if not isinstance(resolved, dict):
            raise TypeError(f"Terminal provider {self.name!r} resolve_config() must return a mapping")
        return copy.deepcopy(resolved)

    @abc.abstractmethod
    def create_environment(
        self,
        *,
        cwd: str,
        timeout: int,
        task_id: str = "default",
        image: str | None = None,
        container_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """A new environment; accept and ignore keyword arguments you do not know."""
