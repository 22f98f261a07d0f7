"""Whose each id is: every session and cron job the API server starts belongs to the key that
made it, and every route that names one asks here first.

A named key reaches what it made: a session it started, went on with or forked here, a cron job
it created. Anything else (another key's, or another host's: `hermes run`, the gateway's
platforms, `hermes cron add`) answers exactly as an id that never existed: the same status and the
same body, so that no answer tells another caller's id from a wrong one. The operator's keys
(`API_SERVER_KEY`, and anyone on a keyless loopback server) reach every session and job of the
home, as `hermes sessions` and `hermes cron` on it do. Responses, runs, conversation names and
idempotency keys are each key's by their own rows (`store`), for every key; a response goes on
only in the session its own key's turn answered in.
"""

from __future__ import annotations

from .http import ApiError
from .keys import ApiKey
from .store import ApiStore

__all__ = ["Owners", "SESSION", "JOB", "session_not_found", "job_not_found"]

SESSION, JOB = "session", "job"


def session_not_found(session_id: str, param: str | None = None) -> ApiError:
    return ApiError(404, f"Session not found: {session_id}", param=param, code="session_not_found")


def job_not_found(job_id: str) -> ApiError:
    return ApiError(404, f"Job not found: {job_id}", code="job_not_found")


class Owners:
    """Who made which session and job, over the server's store."""

    def __init__(self, store: ApiStore) -> None:
        self.store = store

    def record(self, kind: str, ident: str, rights: ApiKey, *, new: bool = False) -> None:
        """`rights` made (or goes on with) `ident`; whoever made it first stays its owner. `new`:
        `ident` was just made (a new session), so the store writes without looking first."""
        if ident:
            self.store.own(kind, ident, rights.name, new=new)

    def reaches(self, kind: str, ident: str, rights: ApiKey) -> bool:
        return rights.operator or self.store.owner(kind, ident) == rights.name

    def mine(self, kind: str, rights: ApiKey) -> set[str] | None:
        """The `kind` ids `rights` may list (None: every one, for the operator's keys)."""
        return None if rights.operator else set(self.store.owned(kind, rights.name))
