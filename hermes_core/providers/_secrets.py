"""`SecretSource`: a secret manager supplying credentials, and what its fetch returns (`FetchResult`, `ErrorKind`)."""

from __future__ import annotations

import abc
import dataclasses
import enum
from pathlib import Path
from typing import Any

from ._defaults import API_VERSION, FETCH_TIMEOUT

__all__ = ["ErrorKind", "FetchResult", "SecretSource"]


class ErrorKind(str, enum.Enum):
    """Why a secret source's fetch failed."""

    NOT_CONFIGURED = "not_configured"
    BINARY_MISSING = "binary_missing"
    AUTH_FAILED = "auth_failed"
    AUTH_EXPIRED = "auth_expired"
    REF_INVALID = "ref_invalid"
    NETWORK = "network"
    EMPTY_VALUE = "empty_value"
    TIMEOUT = "timeout"
    INTERNAL = "internal"


@dataclasses.dataclass
class FetchResult:
    """What one fetch found: `secrets` (name → value) it would supply, warnings, and on failure
    `error` with its `error_kind`."""

    secrets: dict[str, str] = dataclasses.field(default_factory=dict)
    applied: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None
    error_kind: ErrorKind | None = None
    binary_path: Path | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class SecretSource(abc.ABC):
    """A secret manager that supplies environment-variable-shaped credentials
    (`secret_source.provider`). Set the class attributes and implement `fetch`, which never
    raises and never prompts: failures go in the returned `FetchResult`."""

    api_version: int = API_VERSION
    name: str = ""
    label: str = ""
    shape: str = "mapped"  # or "bulk"
    scheme: str | None = None

    @abc.abstractmethod
    def fetch(self, cfg: dict[str, Any], home_path: Path) -> FetchResult:
        """The secrets this source would supply, from its config section `secrets.<name>`."""

    def is_enabled(self, cfg: dict[str, Any]) -> bool:
        return bool(isinstance(cfg, dict) and cfg.get("enabled"))

    def override_existing(self, cfg: dict[str, Any]) -> bool:
        return bool(isinstance(cfg, dict) and cfg.get("override_existing", False))

    def protected_env_vars(self, cfg: dict[str, Any]) -> frozenset[str]:
        return frozenset()

    def fetch_timeout_seconds(self, cfg: dict[str, Any]) -> float:
        try:
            seconds = float((cfg or {}).get("timeout_seconds", FETCH_TIMEOUT))
        except (TypeError, ValueError, AttributeError):
            return FETCH_TIMEOUT
        return seconds if seconds > 0 else FETCH_TIMEOUT

    def config_schema(self) -> dict[str, Any]:
        """`{key: {"description", "default"}}`, for setup screens."""
        return {}

    def invalidate_cache(self, home_path: Path) -> None:
        """Forget anything cached under `home_path`; nothing by default."""

    def remediation(self, kind: ErrorKind | None, cfg: dict[str, Any]) -> str:
        """One line saying what to do about a failed fetch; no I/O, never raises."""
        setup = f"`hermes secrets {self.name} setup`"
        hints = {
            ErrorKind.NOT_CONFIGURED: f"Run {setup} to finish configuration.",
            ErrorKind.BINARY_MISSING: f"Run {setup} to install the helper CLI.",
            ErrorKind.AUTH_FAILED: f"Credentials rejected — run {setup} to re-authenticate.",
            ErrorKind.AUTH_EXPIRED: f"Credentials expired — run {setup} to re-authenticate.",
            ErrorKind.NETWORK: "Network problem reaching the secrets backend — check connectivity and retry.",
            ErrorKind.TIMEOUT: f"Backend was slow — raise secrets.{self.name}.timeout_seconds if this recurs.",
        }
        return hints.get(kind, "") if kind is not None else ""
