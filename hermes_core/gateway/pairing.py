"""`gateway.pairing`, as Hermes does it: a stranger who writes to the agent in a direct message
gets a one-time code; the operator approves it (`hermes pairing approve <platform> <code>`) and
that sender is let in from then on.

Codes: 8 characters without look-alikes, valid an hour, at most 3 waiting per platform, one per
sender every 10 minutes; 5 wrong approvals lock a platform's approvals for an hour. Only a
salted hash of a code is stored. Files under `$HERMES_HOME/platforms/pairing/` (mode 0600),
each change made under a lock and written whole, so the gateway and the CLI can both change them.
With `state.url`, the same files are rows of the shared database (`gateway_pairing`, see
`state`), each change one transaction under an advisory lock: a code given by one gateway is
approved from any host's CLI, and an approval or a revoke holds on every gateway at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes_core import hermes_home
from hermes_core.hosting import locked, read_json, secret_matches, write_json

__all__ = ["PairingStore", "ALPHABET", "CODE_LENGTH", "CODE_TTL_SECONDS"]

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_SECONDS = 3600
RATE_LIMIT_SECONDS = 600
MAX_PENDING_PER_PLATFORM = 3
MAX_FAILED_ATTEMPTS = 5
LOCKOUT_SECONDS = 3600
_LOCK = 0x4E524D50  # the advisory lock a change to the pairings takes on PostgreSQL


class PairingStore:
    """Pending codes and approved senders, per platform."""

    def __init__(self, profile: str | None = None, *, root: Path | None = None, url: Any = "auto") -> None:
        """The home's pairings (`root`: a folder of Hermes' files instead); `url`: the shared database
        (default: the home's `state.url`, when no `root` is given)."""
        del profile  # Hermes' profiles share one home here
        home = hermes_home()
        self.root = root or home / "platforms" / "pairing"
        if url == "auto":
            from hermes_core.hosting import state_url  # the floor is imported only when a home is asked

            url = state_url(home) if root is None else None
        self.store: Any = None
        if url is not None:
            from .state import GatewayStore

            self.store = GatewayStore.of(home if root is None else self.root, url)
        self._tx = threading.local()

    # -- files (or their rows) -------------------------------------------------------------------

    def _read(self, name: str) -> dict[str, Any]:
        if self.store is not None:
            tx = getattr(self._tx, "db", None)
            if tx is not None:
                row = tx.execute("SELECT doc FROM gateway_pairing WHERE name = ?", (name,)).fetchone()
            else:
                with self.store._reading() as db:
                    row = db.execute("SELECT doc FROM gateway_pairing WHERE name = ?", (name,)).fetchone() if db else None
            data = json.loads(row[0]) if row is not None else {}
            return data if isinstance(data, dict) else {}
        try:
            data = read_json(self.root / name)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, name: str, data: dict[str, Any]) -> None:
        if self.store is not None:
            self._tx.db.execute("INSERT INTO gateway_pairing (name, doc) VALUES (?, ?) ON CONFLICT (name) "
                                "DO UPDATE SET doc = excluded.doc", (name, json.dumps(data)))
            return
        write_json(self.root / name, data, mode=0o600)

    def _drop(self, name: str) -> None:
        if self.store is not None:
            self._tx.db.execute("DELETE FROM gateway_pairing WHERE name = ?", (name,))
            return
        (self.root / name).unlink(missing_ok=True)

    def _names(self, suffix: str) -> list[str]:
        """The platforms that have a `<platform><suffix>` file."""
        if self.store is not None:
            with self.store._reading() as db:
                rows = db.execute("SELECT name FROM gateway_pairing WHERE name LIKE ? ORDER BY name",
                                  ("%" + suffix,)).fetchall() if db else []
            return [str(row[0]).removesuffix(suffix) for row in rows]
        return sorted(p.name.removesuffix(suffix) for p in self.root.glob("*" + suffix))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self.store is not None:
            with self.store._writing() as db:
                if self.store.dialect == "postgresql":
                    db.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK,))
                self._tx.db = db
                try:
                    yield
                finally:
                    self._tx.db = None
            return
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / "pairing"):
            yield

    @staticmethod
    def _hash(salt: str, code: str) -> str:
        return hashlib.sha256(bytes.fromhex(salt) + code.encode()).hexdigest()

    def _live(self, platform: str, now: float) -> dict[str, Any]:
        pending = self._read(f"{platform}-pending.json")
        return {k: v for k, v in pending.items() if now - float(v.get("created_at", 0)) < CODE_TTL_SECONDS}

    # -- the flow ------------------------------------------------------------------------------

    def generate_code(self, platform: str, user_id: str, user_name: str = "") -> str | None:
        """A new code for `user_id`, or None when that sender asked less than 10 minutes ago, the
        platform is locked out or already has 3 codes waiting."""
        now = time.time()
        with self._locked():
            limits = self._read("_rate_limits.json")
            if (now - float(limits.get(f"{platform}:{user_id}", 0)) < RATE_LIMIT_SECONDS
                    or now < float(limits.get(f"_lockout:{platform}", 0))):
                return None
            pending = self._live(platform, now)
            if len(pending) >= MAX_PENDING_PER_PLATFORM:
                return None
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            salt = secrets.token_hex(16)
            pending[secrets.token_hex(8)] = {"hash": self._hash(salt, code), "salt": salt, "user_id": str(user_id),
                                             "user_name": user_name, "created_at": now}
            limits[f"{platform}:{user_id}"] = now
            self._write(f"{platform}-pending.json", pending)
            self._write("_rate_limits.json", limits)
            return code

    def approve_code(self, platform: str, code: str) -> dict[str, str] | None:
        """Approve the sender `code` was given to: `{user_id, user_name}`, or None (a wrong or
        expired code, which counts toward the platform's lockout)."""
        now = time.time()
        code = code.strip().upper()
        with self._locked():
            limits = self._read("_rate_limits.json")
            if now < float(limits.get(f"_lockout:{platform}", 0)):
                return None
            pending = self._live(platform, now)
            for entry_id, entry in pending.items():
                if secret_matches(self._hash(str(entry["salt"]), code), str(entry["hash"])):
                    del pending[entry_id]
                    approved = self._read(f"{platform}-approved.json")
                    approved[entry["user_id"]] = {"user_name": entry.get("user_name", ""), "approved_at": now}
                    self._write(f"{platform}-approved.json", approved)
                    self._write(f"{platform}-pending.json", pending)
                    limits.pop(f"_failures:{platform}", None)
                    self._write("_rate_limits.json", limits)
                    return {"user_id": entry["user_id"], "user_name": entry.get("user_name", "")}
            failures = int(limits.get(f"_failures:{platform}", 0)) + 1
            limits[f"_failures:{platform}"] = failures
            if failures >= MAX_FAILED_ATTEMPTS:
                limits[f"_lockout:{platform}"] = now + LOCKOUT_SECONDS
                limits[f"_failures:{platform}"] = 0
            self._write("_rate_limits.json", limits)
            return None

    def locked_until(self, platform: str) -> float | None:
        """When the platform's approvals, locked after too many wrong codes, open again (None: they are open)."""
        until = float(self._read("_rate_limits.json").get(f"_lockout:{platform}", 0))
        return until if until > time.time() else None

    def is_approved(self, platform: str, user_id: str) -> bool:
        return str(user_id) in self._read(f"{platform}-approved.json")

    def list_pending(self, platform: str | None = None) -> list[dict[str, Any]]:
        """Waiting requests (never their codes)."""
        now = time.time()
        platforms = [platform] if platform else self._names("-pending.json")
        return [{"platform": p, "user_id": e["user_id"], "user_name": e.get("user_name", ""),
                 "age_minutes": int((now - float(e["created_at"])) // 60)}
                for p in platforms for e in sorted(self._live(p, now).values(), key=lambda e: e["created_at"])]

    def list_approved(self, platform: str | None = None) -> list[dict[str, Any]]:
        platforms = [platform] if platform else self._names("-approved.json")
        return [{"platform": p, "user_id": user, "user_name": e.get("user_name", "")}
                for p in platforms for user, e in sorted(self._read(f"{p}-approved.json").items())]

    def revoke(self, platform: str, user_id: str) -> bool:
        with self._locked():
            approved = self._read(f"{platform}-approved.json")
            if approved.pop(str(user_id), None) is None:
                return False
            self._write(f"{platform}-approved.json", approved)
            return True

    def clear_pending(self, platform: str | None = None) -> int:
        with self._locked():
            count = 0
            for name in [platform] if platform else self._names("-pending.json"):
                count += len(self._read(f"{name}-pending.json"))
                self._drop(f"{name}-pending.json")
            return count
