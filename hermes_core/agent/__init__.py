"""The reference host: an agent loop built on hermes-core, with sessions stored in SQLite (or in
the PostgreSQL database `state.url` names).

It is the demonstration that the framework holds together (`hermes run`, `hermes chat`),
written to be read in one sitting and copied into a host of your own.
"""

from hermes_core import SessionNotFoundError

from .display import Display, Relayed, progress_text
from .loop import DEFAULT_SYSTEM_PROMPT, FIRED_HOOKS, Agent, TurnResult
from .store import SessionStore

__all__ = ["DEFAULT_SYSTEM_PROMPT", "FIRED_HOOKS", "Agent", "Display", "Relayed", "SessionNotFoundError",
           "SessionStore", "TurnResult", "progress_text"]
