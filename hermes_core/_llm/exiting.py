"""A process's exit with budgeted calls' settlements not yet in the ledger: bounded, and said.

At exit, the counters' thread gets up to `EXIT_WAIT` seconds to write what the calls that ended
settled to (a ledger that answers gets all of it, even a slow one), and the settlements kept for
later because the ledger was out of reach are tried once more, for at most `RETRY_WAIT` seconds;
a ledger that refuses connections fails at once, so the exit does not wait. What is still not
written is said on stderr in one line: how many calls, their tokens and cost, their holders, and
what becomes of them. A call reserved in Redis or in the ledger is released when its reservation's
lease ends (its holders get back what it held) and its usage stays uncounted; a call let through
while the ledger was out of reach (`budgets.on_store_error: open`) is counted nowhere.
"""

from __future__ import annotations

import atexit
import datetime as dt
import sys
import threading
import time
import weakref
from typing import Any

from .holds import Settling

__all__ = ["EXIT_WAIT", "RETRY_WAIT", "finish", "unwritten", "watch"]

EXIT_WAIT = 10.0  # seconds, at most, for the counters' thread to write what the calls settled to
RETRY_WAIT = 1.0  # seconds, at most, for one more try of what was kept for later
_watched: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()
_registered = False


def watch(ledger: Any) -> None:
    """`ledger` (a `Ledger`) may have settlements to write when the process exits: `finish` it then.
    The exit handler is registered on first use, after the shared database's own (which closes its
    connections), so that it runs before it."""
    global _registered
    with _lock:
        _watched.add(ledger)
        if not _registered:
            _registered = True
            atexit.register(_at_exit)


def _at_exit() -> None:
    deadline = time.monotonic() + EXIT_WAIT
    for ledger in list(_watched):
        line = finish(ledger, deadline)
        if line:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()


def finish(ledger: Any, deadline: float) -> str | None:
    """Write what `ledger` has left by `deadline` (monotonic seconds) as the module says: None when all
    of it was written, else the line that says what was not."""
    counters = ledger.counters
    handled = counters is None or counters.flush(max(deadline - time.monotonic(), 0.0))
    writing = 0 if handled else counters.unhandled()
    if ledger.pending():
        retry = threading.Thread(target=_catch_up, args=(ledger,), name="hermes-llm-exit", daemon=True)
        retry.start()
        retry.join(min(RETRY_WAIT, max(deadline - time.monotonic(), 0.1)))
    kept = [op for op in ledger.kept() if isinstance(op, Settling)]
    if not kept and not writing:
        return None
    return unwritten(ledger.what, ledger.location, kept, writing)


def _catch_up(ledger: Any) -> None:
    try:
        ledger.catch_up()
    except Exception:  # noqa: BLE001 - still out of reach: said by `finish`
        pass


def unwritten(what: str, location: str, kept: list[Settling], writing: int = 0) -> str:
    """The line that says which settlements `what` at `location` did not get before the process
    exited: those `kept` for later, and `writing` more still being written when time ran out."""
    parts: list[str] = []
    if kept:
        tokens, cost = sum(op.tokens for op in kept), sum(op.cost for op in kept)
        holders = sorted({hold.who for op in kept for hold in op.reservation.holds})
        calls = "calls'" if len(kept) != 1 else "call's"
        parts.append(f"{len(kept)} LLM {calls} usage ({tokens:,} tokens, ${cost:.4f}; "
                     f"{', '.join(holders)}) is not recorded")
    if writing:
        parts.append(f"{writing} more settlement{'s' if writing != 1 else ''} were still being written")
    fates: list[str] = []
    redis = [op for op in kept if op.reservation.counted]
    rows = [op for op in kept if not op.reservation.counted and any(hold.id for hold in op.reservation.holds)]
    if redis or writing:
        fates.append(f"the reservations held in Redis{_by(redis)}")
    if rows:
        fates.append(f"the reservations in the ledger{_by(rows)}")
    tail = (f"{' and '.join(fates)} are released when their lease ends, giving their budgets back, and that usage "
            "stays uncounted" if fates else "")
    if len(redis) + len(rows) < len(kept):
        let = "calls let through while it was out of reach (budgets.on_store_error: open) are counted nowhere"
        tail = f"{tail}; {let}" if tail else let
    return f"hermes: the {what} ({location}) could not be reached at exit: {'; '.join(parts)}; {tail}"


def _by(ops: list[Settling]) -> str:
    """When the last of `ops`' reservations' leases ends, in words (empty when unknown)."""
    latest = max((op.reservation.expires for op in ops), default=0.0)
    if not latest:
        return ""
    return f" (by {dt.datetime.fromtimestamp(latest, dt.timezone.utc).isoformat(timespec='seconds')})"
