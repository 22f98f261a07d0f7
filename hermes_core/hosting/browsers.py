"""Browsers kept out of a host's HTTP server: a web page the user visits must not drive it.

A page can make the browser post a form to `http://127.0.0.1:PORT` (a "simple" request: no
preflight, `Content-Type: text/plain`) or point a name it controls at 127.0.0.1 (DNS rebinding:
the browser then calls the server "same-origin", with `Host: evil.example:PORT`). Every request
to a host is checked here, once, before the app sees it (the MCP SDK's DNS-rebinding protection
is the model):

1. `Host` is the address served (on loopback: `127.0.0.1`, `localhost` or `[::1]` with the port)
   or one of `hosting.allowed_hosts` (a reverse proxy's name): else 421;
2. `Origin`, when a browser sends one, is the server's own (the `Host` it was sent to) or one of
   `hosting.allowed_origins`: else 403; a request without one (curl, the openai SDK) passes;
3. a POST, PUT, PATCH or DELETE with a body sends it as JSON (`application/json` or `+json`),
   unless its path takes another type (`BrowserPolicy.bodies`): else 415.

>>> policy = BrowserPolicy.from_config(manager.config)
>>> app = GuardBrowsers(app, policy, "127.0.0.1", 8642)   # serve_asgi does this for its app

An allowed origin's browser requests also get the CORS headers (and preflights their answer),
so a web page of the operator's may call the server with JSON.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from hermes_core import ConfigError
from hermes_core import config_keys as keys

from .._net import is_loopback

if TYPE_CHECKING:
    from hermes_core import Config

__all__ = ["BrowserPolicy", "GuardBrowsers", "Refusal"]

CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


@attrs.frozen
class Refusal:
    """A request refused before the app saw it: the status, OpenAI's error object fields (`param`:
    the header refused), and `body()` to send."""

    status: int
    code: str
    param: str
    message: str

    def body(self) -> bytes:
        return json.dumps({"error": {"message": self.message, "type": "invalid_request_error", "param": self.param,
                                     "code": self.code}}).encode()


def _split_host(value: str) -> tuple[str, int | None] | None:
    """`name`, `name:port`, `[v6]` or `[v6]:port` as (lowercase name, port or None); None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, close, rest = value[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    else:
        name, colon, port_text = value.rpartition(":")
        name, port = (name, port_text) if colon else (port_text, None)
        if ":" in name:
            return None  # an IPv6 address must be bracketed
    if not name or (port is not None and not (port.isdigit() and 0 < int(port) < 65536)):
        return None
    return name, int(port) if port is not None else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _origin(value: str) -> str | None:
    """An origin normalised (`scheme://host[:port]`, lowercase, no default port); None when it is not one."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment or parts.username is not None:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 80 if parts.scheme == "http" else 443
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def _hosts(value: Any) -> tuple[str, ...]:
    for entry in value:
        split = _split_host(entry) if entry != "*" else ("*", None)
        if split is None or not (split[0] == "*" or _is_ip(split[0]) or _NAME.fullmatch(split[0])):
            raise ConfigError(f"{keys.HOSTING_ALLOWED_HOSTS.name} in config.yaml: {entry!r} is not a host name or "
                              "name:port; fix it")
    return tuple(entry.lower() for entry in value)


def _origins(value: Any) -> tuple[str, ...]:
    normalised = []
    for entry in value:
        origin = "*" if entry == "*" else _origin(entry)
        if origin is None:
            raise ConfigError(f"{keys.HOSTING_ALLOWED_ORIGINS.name} in config.yaml: {entry!r} is not an origin "
                              "(scheme://host or scheme://host:port, as a browser sends it); fix it")
        normalised.append(origin)
    return tuple(normalised)


@attrs.frozen
class BrowserPolicy:
    """Who may reach a host's HTTP server besides its own address: `hosts` (names, `name:port`, or
    `*` for any), `origins` (`scheme://host[:port]`, or `*`), and `bodies`, the media types other
    than JSON a path takes in a state-changing request (a platform that posts forms, say)."""

    hosts: tuple[str, ...] = attrs.field(default=(), converter=_hosts)
    origins: tuple[str, ...] = attrs.field(default=(), converter=_origins)
    bodies: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)

    @classmethod
    def from_config(cls, config: Config, *, bodies: Mapping[str, tuple[str, ...]] | None = None) -> BrowserPolicy:
        """The policy of `hosting.allowed_hosts` and `hosting.allowed_origins` in config.yaml."""
        return cls(config.read(keys.HOSTING_ALLOWED_HOSTS), config.read(keys.HOSTING_ALLOWED_ORIGINS),
                   dict(bodies or {}))

    def refusal(self, method: str, path: str, headers: Iterable[tuple[str, str]], served: str,
                port: int) -> Refusal | None:
        """Why a request to the server at `served:port` is refused (None: it is not). `headers` are
        the request's (name, value) pairs; a second Host, Origin or Content-Type is refused too."""
        seen: dict[str, list[str]] = {}
        for name, value in headers:
            seen.setdefault(name.lower(), []).append(value)
        for name in ("host", "origin", "content-type"):
            if len(seen.get(name, ())) > 1:
                return Refusal(400, "duplicate_header", name.title(), f"the request has more than one {name.title()} "
                               "header; send one")
        host = (seen.get("host") or [""])[0].strip()
        if host and not self._host_served(host, served, port):
            return Refusal(421, "host_not_allowed", "Host",
                           f"the Host header {host[:100]!r} is not an address this server answers to "
                           f"({_shown(served, port)}); a name it is reached by (a reverse proxy's) goes in "
                           f"{keys.HOSTING_ALLOWED_HOSTS.name} in config.yaml")
        origin = (seen.get("origin") or [""])[0].strip()
        if origin and not self._origin_allowed(origin, host):
            return Refusal(403, "origin_not_allowed", "Origin",
                           f"a browser request from {origin[:100]!r} (another site) is refused; a web page "
                           f"allowed to call this server has its origin in {keys.HOSTING_ALLOWED_ORIGINS.name} "
                           "in config.yaml")
        if method.upper() in CHANGING:
            given = (seen.get("content-type") or [""])[0]
            media = given.partition(";")[0].strip().lower()
            has_body = (seen.get("content-length") or ["0"])[0].strip() not in ("", "0") or "transfer-encoding" in seen
            if (media or has_body) and not self._body_accepted(media, path):
                return Refusal(415, "unsupported_media_type", "Content-Type",
                               f"a {method.upper()} body of {(given.strip() or 'no type')[:100]!r} is refused (a "
                               "browser's form post sends one); send JSON with Content-Type: application/json")
        return None

    def cors_origin(self, headers: Iterable[tuple[str, str]]) -> str | None:
        """The request's Origin when it is one of `origins` (its answer gets CORS headers), else None."""
        origin = next((value for name, value in headers if name.lower() == "origin"), "")
        normalised = _origin(origin) if origin else None
        if normalised is None or not (normalised in self.origins or "*" in self.origins):
            return None
        return origin.strip()

    def _host_served(self, value: str, served: str, port: int) -> bool:
        split = _split_host(value)
        if split is None:
            return False
        name, given_port = split
        if "*" in self.hosts or any(_allows(entry, name, given_port) for entry in self.hosts):
            return True
        if (given_port or 80) != port:
            return False
        bound = served.strip("[]").lower()
        if name == bound:
            return True
        if bound in _WILDCARDS:  # every address of the machine: its addresses, never a name (rebinding uses one)
            return _is_ip(name) or name == "localhost"
        return is_loopback(bound) and name in _LOOPBACK_NAMES

    def _origin_allowed(self, origin: str, host: str) -> bool:
        normalised = _origin(origin)
        if normalised is None:  # "null" (a sandboxed frame, a file), or junk: a browser, not this server
            return False
        if host and normalised.partition("://")[2] == host.lower():
            return True  # the page was served by this server, at the address it was sent to
        return normalised in self.origins or "*" in self.origins

    def _body_accepted(self, media: str, path: str) -> bool:
        if media == "application/json" or (media.startswith("application/") and media.endswith("+json")):
            return True
        return bool(media) and media in self.bodies.get(path, ())


def _allows(entry: str, name: str, port: int | None) -> bool:
    split = _split_host(entry)
    return split is not None and split[0] == name and split[1] in (None, port)


def _shown(served: str, port: int) -> str:
    bare = served.strip("[]")
    if is_loopback(bare):
        return f"127.0.0.1:{port}, localhost:{port} or [::1]:{port}"
    if bare in _WILDCARDS:
        return f"this machine's addresses with port {port}"
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


class GuardBrowsers:
    """ASGI middleware: an HTTP or WebSocket request `policy` refuses (see the module) gets its
    refusal and never reaches `app`; an allowed origin's requests get CORS headers, its preflights
    an answer. `served` and `port` are the address the server listens on (the port it was given)."""

    def __init__(self, app: Any, policy: BrowserPolicy, served: str, port: int) -> None:
        self.app, self.policy, self.served, self.port = app, policy, served, port

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope.get("headers") or []]
        method = scope.get("method", "GET") if scope["type"] == "http" else "GET"
        refused = self.policy.refusal(method, scope.get("path", "/"), headers, self.served, self.port)
        if refused is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": refused.message[:120]})
                return
            await _send(send, refused.status, refused.body(), [(b"connection", b"close")])
            return
        origin = self.policy.cors_origin(headers)
        if origin is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        allow = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
        asked = dict((name.lower(), value) for name, value in headers)
        if method == "OPTIONS" and "access-control-request-method" in asked:
            await _send(send, 204, b"", [*allow, (b"access-control-allow-methods", b"GET, POST, PUT, PATCH, DELETE"),
                                         (b"access-control-allow-headers",
                                          asked.get("access-control-request-headers", "").encode("latin-1")),
                                         (b"access-control-max-age", b"600")])
            return

        async def with_cors(message: Any) -> None:
            if message.get("type") == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *allow,
                                                  (b"access-control-expose-headers", b"*")]}
            await send(message)

        await self.app(scope, receive, with_cors)


async def _send(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    typed = [(b"content-type", b"application/json")] if body else []
    await send({"type": "http.response.start", "status": status,
                "headers": [*typed, (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})
