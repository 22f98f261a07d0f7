"""Which store holds the shared state: `state.url` in config.yaml or `HERMES_STATE_URL`.

Absent, every stage keeps its SQLite files under `$HERMES_HOME` as it always did. A
`postgresql://` (or `postgres://`) URL puts the shared state of every host that names it in
that database. The URL's password is never shown: `StateUrl.masked` is what every message
and listing prints.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .._errors import ConfigError

__all__ = ["ENV", "StateUrl", "parse_state_url", "state_url"]

ENV = "HERMES_STATE_URL"
_SCHEMES = ("postgresql", "postgres")


class StateUrl:
    """A parsed PostgreSQL URL: `url` for the driver, `masked` (password as ***) for people."""

    __slots__ = ("url", "masked", "host", "port", "database", "user", "_password")

    def __init__(self, url: str, masked: str, host: str, port: int, database: str, user: str, password: str) -> None:
        self.url, self.masked, self.host, self.port = url, masked, host, port
        self.database, self.user, self._password = database, user, password

    def __repr__(self) -> str:
        return f"StateUrl({self.masked!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateUrl) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def scrub(self, text: str) -> str:
        """`text` with this URL's password (and the whole URL) replaced by their masked forms."""
        text = text.replace(self.url, self.masked)
        if self._password:
            text = text.replace(self._password, "***")
        return text


def _mask(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url, count=1)


def parse_state_url(raw: object, *, where: str = "state.url") -> StateUrl | None:
    """`raw` as a `StateUrl`; None when empty; a `ConfigError` naming `where` when malformed."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise ConfigError(f"{where} must be a postgresql:// URL (a string), not {type(raw).__name__}")
    text = raw.strip()
    masked = _mask(text)
    try:
        parts = urlsplit(text)
        port = parts.port or 5432
    except ValueError as exc:
        raise ConfigError(f"{where} is not a valid URL ({masked}: {exc}); write it as "
                          "postgresql://USER:PASSWORD@HOST:PORT/DATABASE") from None
    if parts.scheme not in _SCHEMES:
        raise ConfigError(f"{where} must start with postgresql:// (got {masked!r}); leave it out to keep the state "
                          "in SQLite under $HERMES_HOME")
    database = unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise ConfigError(f"{where} names no database ({masked}); write it as postgresql://USER:PASSWORD@HOST:PORT/DATABASE")
    if not parts.hostname and "host=" not in parts.query:
        raise ConfigError(f"{where} names no host ({masked}); write it as postgresql://USER:PASSWORD@HOST:PORT/DATABASE")
    return StateUrl(text, masked, parts.hostname or "", port, database, unquote(parts.username or ""),
                    unquote(parts.password or ""))


def state_url(home: Path | None = None) -> StateUrl | None:
    """The configured shared store: `HERMES_STATE_URL`, else `state.url` in `home`'s config.yaml;
    None for the embedded default (SQLite under the home)."""
    raw = os.environ.get(ENV)
    if raw:
        return parse_state_url(raw, where=ENV)
    from .. import config_keys
    from .._config.file import load_config

    return parse_state_url(load_config(home).read(config_keys.STATE_URL))
