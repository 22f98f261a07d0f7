"""A budgeted call's settlement: what it reserved becomes what it used (an answer that then failed,
such as JSON that does not match the schema, was still paid for), or is given back when none came;
a call cut off by its caller (cancelled, interrupted) once its request was out keeps its prompt's
part, which the model read. Written to the ledger, or through Redis's counters when the call was
reserved there; a ledger out of reach keeps it for its next write."""

from __future__ import annotations

import asyncio
from typing import Any

from .._errors import MemoryStoreError
from .holds import Reservation
from .ledger import Ledger
from .writer import LedgerThread

__all__ = ["asettle", "settle", "settlement"]


def settlement(reservation: Reservation, answer: Any, sent: int, exc: BaseException | None) -> tuple[int, float]:
    """The tokens and cost `reservation` settles to: the `answer`'s usage; its prompt's when no
    answer came and the call was cut off after `sent` requests went out; nothing otherwise."""
    if answer is not None:
        return answer.usage.total_tokens, answer.usage.cost_usd or 0.0
    if sent and isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
        return reservation.prompt
    return 0, 0.0


def settle(ledger: Ledger, reservation: Reservation, tokens: int, cost: float) -> None:
    if reservation.counted and ledger.counters is not None:  # on the counters' thread, nothing to wait for
        ledger.counters.hand_over(reservation, tokens, cost)
        return
    settling = ledger.settling(reservation, tokens, cost)
    try:
        ledger.write(settling)
    except MemoryStoreError:  # out of reach: written with the next write that can
        ledger.later(settling)


async def asettle(ledger: Ledger, writer: LedgerThread, reservation: Reservation, tokens: int, cost: float) -> None:
    if reservation.counted and ledger.counters is not None:  # on the counters' thread, nothing to wait for
        ledger.counters.hand_over(reservation, tokens, cost)
        return
    settling = ledger.settling(reservation, tokens, cost)
    try:
        await writer.write(settling)
    except MemoryStoreError:  # out of reach: written with the next write that can
        ledger.later(settling)
