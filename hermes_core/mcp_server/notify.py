"""What a tool call tells its MCP client while it runs: its progress (`ctx.report_progress`, to a
client that asked for progress) and the log records made during the call (the plugin's logger and
hermes-core's own, as `notifications/message` at the client's level).

Both are made on the tool's thread and sent, in order, from the request's task on the server's
event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from hermes_core.hosting import progress_scope

__all__ = ["LEVELS", "Levels", "notifying"]

log = logging.getLogger("hermes.mcp")

# MCP's log levels, lowest first, and Python's for each.
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO + 5, "warning": logging.WARNING,
          "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL + 5,
          "emergency": logging.CRITICAL + 10}

_call: contextvars.ContextVar[Callable[[logging.LogRecord], None] | None] = contextvars.ContextVar(
    "hermes_mcp_call_log", default=None)


class Levels:
    """The log level the client asked for (`logging/setLevel`; the last one asked, for a server
    over HTTP with several clients); "warning" until one asks."""

    def __init__(self, default: str = "warning") -> None:
        self.level = default

    def set(self, level: str) -> None:
        self.level = level
        _let_through(LEVELS[level])


def _let_through(level: int) -> None:
    """Records from `level` up reach this server: the root logger is lowered if need be, and its
    handlers (stderr) keep showing what they showed."""
    root = logging.getLogger()
    if level < root.getEffectiveLevel():
        for handler in root.handlers:
            if handler is not _forward and handler.level < root.getEffectiveLevel():
                handler.setLevel(root.getEffectiveLevel())
        root.setLevel(level)


class _Forward(logging.Handler):
    """On the root logger while a server runs: hands each record made inside a tool call to that call."""

    def emit(self, record: logging.LogRecord) -> None:
        send = _call.get()
        if send is not None:
            send(record)


_forward = _Forward()


def _mcp_level(levelno: int) -> str:
    return next((name for name, number in reversed(list(LEVELS.items())) if levelno >= number), "debug")


@asynccontextmanager
async def notifying(ctx: Any, levels: Levels) -> AsyncIterator[None]:
    """Run a tool call inside: its progress reports and its log records go to the client."""
    loop = asyncio.get_running_loop()
    session = ctx.session
    wants_progress = (getattr(ctx, "meta", None) or {}).get("progress_token") is not None
    asked = (getattr(ctx, "meta", None) or {}).get("io.modelcontextprotocol/logLevel")  # 2026-07-28: per request
    threshold = LEVELS[asked if asked in LEVELS else levels.level]
    _let_through(threshold)
    queued: list[Any] = []  # made from the call's threads (append is atomic): a call that says nothing costs nothing
    sent: asyncio.Queue[Any] = asyncio.Queue()
    sender: list[asyncio.Task[None]] = []  # started with the first notification

    def on_loop(item: Any) -> None:
        if not sender:
            sender.append(loop.create_task(send_all()))
        sent.put_nowait(item)

    def queue(item: Any) -> None:
        queued.append(item)
        try:
            loop.call_soon_threadsafe(on_loop, item)
        except RuntimeError:  # the loop has closed: the client is gone
            pass

    def progressed(progress: float, total: float | None, message: str) -> None:
        queue(("progress", progress, total, message or None))

    def logged(record: logging.LogRecord) -> None:
        if record.levelno >= threshold:
            queue(("log", _mcp_level(record.levelno), record.getMessage(), record.name))

    async def send_all() -> None:
        while (item := await sent.get()) is not None:
            try:
                if item[0] == "progress":
                    await session.report_progress(*item[1:])
                else:
                    with warnings.catch_warnings():  # logging notifications are deprecated in 2026-07-28, not gone
                        warnings.simplefilter("ignore")
                        await session.send_log_message(item[1], item[2], logger=item[3],
                                                       related_request_id=getattr(ctx, "request_id", None))
            except Exception as exc:  # noqa: BLE001 - a lost notification never fails the call
                log.debug("a notification was not sent: %s: %s", type(exc).__name__, exc)

    root = logging.getLogger()
    if _forward not in root.handlers:
        root.addHandler(_forward)
    token = _call.set(logged)
    try:
        with progress_scope(progressed if wants_progress else None):
            yield
    finally:
        _call.reset(token)
        if queued:  # sent before the call's answer: after what its threads queued before it ended
            flushed: asyncio.Future[None] = loop.create_future()

            def finish() -> None:
                on_loop(None)
                sender[0].add_done_callback(lambda _: flushed.set_result(None))

            loop.call_soon(finish)
            await flushed
