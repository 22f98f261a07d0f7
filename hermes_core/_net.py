"""Network addresses: whether a host name or address stays on this machine (`is_loopback`), in one
place for every stage that decides by it (the servers' binding, a portable package's http URL)."""

from __future__ import annotations

import ipaddress

__all__ = ["LOOPBACK_NAMES", "is_loopback"]

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
