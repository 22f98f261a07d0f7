"""What keeps the dashboard safe: the audit log, the login rate limit, CSRF tokens, cookies.

- `Audit`: one line per login, logout and action in `$HERMES_HOME/logs/dashboard.log` (no secret:
  user ids, provider names, plugin ids and job ids only);
- `RateLimit`: at most N attempts per client address in a sliding minute (logins: 10);
- `csrf_token(secret, identity)`: the token every state-changing request carries
  (`X-CSRF-Token`), bound to who is logged in and to this process;
- `cookie(...)`: a `Set-Cookie` value, always HttpOnly and SameSite=Lax, Secure off loopback.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import deque
from pathlib import Path

__all__ = ["Audit", "RateLimit", "csrf_token", "cookie", "expired_cookie"]


class Audit:
    """Appends one line per event to `logs/dashboard.log` under the home (a failed write is skipped:
    the audit never takes the dashboard down)."""

    def __init__(self, home: Path) -> None:
        self.path = home / "logs" / "dashboard.log"
        self._lock = threading.Lock()

    def __call__(self, event: str, *, who: str = "-", client: str = "-", **fields: object) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        extra = " ".join(f"{key}={_clean(value)}" for key, value in fields.items())
        line = f"{stamp} {event} user={_clean(who)} client={_clean(client)} {extra}".rstrip() + "\n"
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as out:
                    out.write(line)
        except OSError:
            pass


def _clean(value: object) -> str:
    text = str(value)
    text = "".join(ch if ch.isprintable() and not ch.isspace() else "_" for ch in text)[:200]
    return text or "-"


class RateLimit:
    """At most `limit` attempts per key in any `window` seconds (`allow(key)` records one)."""

    def __init__(self, limit: int = 10, window: float = 60.0) -> None:
        self.limit, self.window = limit, window
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        moment = time.monotonic()
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen = {k: v for k, v in self._seen.items() if v and v[-1] > moment - self.window}
            times = self._seen.setdefault(key, deque())
            while times and times[0] <= moment - self.window:
                times.popleft()
            if len(times) >= self.limit:
                return False
            times.append(moment)
            return True


def csrf_token(secret: bytes, identity: str) -> str:
    """The CSRF token of `identity` (who is logged in) in this process."""
    return hmac.new(secret, b"csrf\0" + identity.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def cookie(name: str, value: str, *, secure: bool, max_age: int | None = None, path: str = "/") -> str:
    parts = [f"{name}={value}", f"Path={path}", "HttpOnly", "SameSite=Lax"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


def expired_cookie(name: str, *, secure: bool) -> str:
    return cookie(name, "", secure=secure, max_age=0)
