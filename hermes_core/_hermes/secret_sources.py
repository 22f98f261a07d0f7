"""Hermes' `agent.secret_sources.base` helpers (`SecretSource` and `ErrorKind` are in
`hermes_core.providers`): the fetch result, and running a secret manager's CLI safely."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..providers._defaults import API_VERSION, FETCH_TIMEOUT
from ..providers._secrets import FetchResult

__all__ = [
    "DEFAULT_CLI_TIMEOUT_SECONDS",
    "DEFAULT_FETCH_TIMEOUT_SECONDS",
    "SECRET_SOURCE_API_VERSION",
    "FetchResult",
    "build_minimal_provider_env",
    "is_valid_env_name",
    "redact_secret_value",
    "run_secret_cli",
    "scrub_ansi",
]

SECRET_SOURCE_API_VERSION = API_VERSION
DEFAULT_FETCH_TIMEOUT_SECONDS = FETCH_TIMEOUT
DEFAULT_CLI_TIMEOUT_SECONDS = 30.0

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# ECMA-48 controls: CSI, OSC / DCS / SOS / PM / APC strings (terminated or cut off), other ESC
# sequences, and 8-bit C1 forms.
_ANSI = re.compile(
    r"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\][\s\S]*?(?:\x07|\x1b\\|$)|[PX^_][\s\S]*?(?:\x1b\\|$)"
    r"|[\x20-\x2f]+[\x30-\x7e]|[\x30-\x7e])"
    r"|\x9b[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\x9d[\s\S]*?(?:\x07|\x9c|\x1b\\|$)"
    r"|[\x90\x98\x9e\x9f][\s\S]*?(?:\x9c|\x1b\\|$)|[\x80-\x9f]"
)
# What a helper CLI may see of the environment besides what the source names: locations,
# locale, proxies and certificates.
_CHILD_ENV = (
    "PATH", "HOME", "USERPROFILE", "SYSTEMROOT", "SystemRoot", "TMPDIR", "TMP", "TEMP", "LANG", "LC_ALL",
    "APPDATA", "LOCALAPPDATA", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
    "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy", "no_proxy",
    "HERMES_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
)




def is_valid_env_name(name: str) -> bool:
    """Whether `name` can be an environment variable's name."""
    return bool(name) and bool(_ENV_NAME.match(name))


def scrub_ansi(text: str) -> str:
    """`text` without terminal control sequences (7- and 8-bit)."""
    return _ANSI.sub("", text or "")


def redact_secret_value(text: str, secret: str, *, replacement: str = "<redacted>") -> str:
    """`text` with every occurrence of the known `secret` replaced."""
    if not text or not secret:
        return text or ""
    return text.replace(secret, replacement)


def build_minimal_provider_env(
    source_env: Mapping[str, str] | None = None, *, allow_env: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A helper CLI's environment: the basics, the variables in `allow_env`, `extra_env`, NO_COLOR=1."""
    source = os.environ if source_env is None else source_env
    env = {key: source[key] for key in (*_CHILD_ENV, *allow_env) if source.get(key) is not None}
    env.update(extra_env or {})
    env["NO_COLOR"] = "1"
    return env


def run_secret_cli(
    argv: Sequence[str], *, allow_env: Sequence[str] = (), extra_env: dict[str, str] | None = None,
    timeout: float = DEFAULT_CLI_TIMEOUT_SECONDS,
) -> subprocess.CompletedProcess[str]:
    """Run a secret manager's CLI: an argument list (never a shell), a minimal environment, no
    stdin, stderr without terminal controls. `RuntimeError` when it cannot start or times out;
    the exit status is the caller's to read."""
    tool = Path(str(argv[0])).name if argv else "(nothing)"
    try:
        done = subprocess.run(  # noqa: S603 - an argument list, no shell
            list(argv), env=build_minimal_provider_env(allow_env=allow_env, extra_env=extra_env),
            capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{tool} timed out after {timeout:.0f}s") from exc
    except (OSError, ValueError, IndexError) as exc:
        raise RuntimeError(f"failed to invoke {tool}: {exc}") from exc
    done.stdout = done.stdout or ""
    done.stderr = scrub_ansi(done.stderr or "")
    return done
