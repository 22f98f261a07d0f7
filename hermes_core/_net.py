"""Network addresses: whether a host name or address stays on this machine (`is_loopback`), in one
place for every stage that decides by it (the servers' binding, a portable package's http URL);
and what an HTTP client can send (`unsendable`), checked where a URL or header is configured
rather than found out at connect."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

__all__ = ["LOOPBACK_NAMES", "is_loopback", "unsendable"]

_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")  # what an HTTP client sends as a header's value
_URL_TEXT = re.compile(r"[\x21-\x7e]+")

LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(host: str) -> bool:
    """Whether `host` (a name, an IPv4 or IPv6 address, bracketed or not) stays on this machine.

    >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def unsendable(url: str, headers: Mapping[str, str]) -> str | None:
    """Why an HTTP client cannot send a request to `url` with `headers` (None: it can): a URL with a
    space, a tab, a line break (a header injected) or a character past ASCII; a header name that is
    no token, a value with a control character.

    >>> unsendable("https://example.org/mcp\\r\\nX-Injected: 1", {})
    'url must be printable ASCII without spaces (percent-encode the rest)'
    """
    if not _URL_TEXT.fullmatch(url):  # urlsplit drops tabs and line breaks; the HTTP client refuses them
        return "url must be printable ASCII without spaces (percent-encode the rest)"
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            return f"header name {name[:60]!r} is not a token (letters, digits and !#$%&'*+-.^_`|~)"
        if not _FIELD_VALUE.fullmatch(value):
            return f"header {name} must be printable ASCII (spaces and tabs allowed, no control character)"
    return None
