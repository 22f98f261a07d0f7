"""A command's stdout is its output: what plugin code prints goes to stderr.

`hermes plugins doctor --json | jq`, `hermes run "..." > answer.txt`: a plugin that prints a
debug line while it loads or runs must not corrupt what the command writes. While a command
runs, `sys.stdout` is a router: writes made by the CLI's own output (click, hermes_core) reach
the real stdout; anyone else's (a plugin's `print`, a logging handler on `sys.stdout`) go to
stderr, where the user still sees them. A plugin's own CLI command
(`ctx.register_cli_command`) owns stdout while its handler runs: its output is the command's.

When stdout is not a terminal (a pipe, a file: output something reads), file descriptor 1
itself points at stderr while the command runs, so that what a plugin's subprocess, daemon or C
code writes there lands on stderr too (children inherit it); the command's own output goes to
the real stdout through a descriptor of its own, and descriptor 1 is restored afterwards. On a
terminal descriptor 1 is left alone (a person reads both; `input()` keeps its line editing).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, TextIO

__all__ = ["routed", "plugin_owns_stdout", "protocol_streams"]

_OURS = ("click", "hermes_core")


class _Router:
    """`sys.stdout` during a command: the real stdout for the CLI's own writes, stderr for the rest."""

    def __init__(self, out: TextIO, err: TextIO, saved_fd: int | None = None) -> None:
        self.out, self.err = out, err
        self.plugin_owns = False
        self.saved_fd = saved_fd  # the real stdout's descriptor while descriptor 1 points at stderr

    def write(self, text: Any) -> int:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        ours = self.plugin_owns or caller.partition(".")[0] in _OURS
        return (self.out if ours else self.err).write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        for stream in (self.out, self.err):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe is the main loop's to report
                pass

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer...: the real stdout's
        return getattr(self.out, name)


def _point_fd1_at_stderr(real: TextIO) -> tuple[TextIO, int] | None:
    """Descriptor 1 made a copy of descriptor 2; returns a text stream on the real stdout (a
    descriptor of its own) and that descriptor. None when stdout is a terminal or not fd 1."""
    try:
        if real.fileno() != 1 or os.isatty(1):
            return None
        real.flush()
        saved = os.dup(1)
        sys.stderr.flush()
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    out = io.TextIOWrapper(io.FileIO(saved, "w", closefd=False), encoding=real.encoding, errors=real.errors,
                           line_buffering=bool(getattr(real, "line_buffering", False)), write_through=True)
    return out, saved


@contextmanager
def routed() -> Iterator[None]:
    """Route `sys.stdout` (and, when it is not a terminal, descriptor 1) for the duration of a
    command (restored afterwards)."""
    real = sys.stdout
    if real is None or isinstance(real, _Router):
        yield
        return
    moved = _point_fd1_at_stderr(real)
    sys.stdout = _Router(moved[0] if moved else real, sys.stderr, moved[1] if moved else None)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _Router):
            sys.stdout.flush()
        sys.stdout = real
        if moved is not None:
            moved[0].flush()
            os.dup2(moved[1], 1)
            os.close(moved[1])


@contextmanager
def plugin_owns_stdout() -> Iterator[None]:
    """A plugin's own CLI command runs: everything it prints is the command's output."""
    router = sys.stdout
    if not isinstance(router, _Router):
        yield
        return
    router.plugin_owns = True
    if router.saved_fd is not None:  # its subprocesses' output is the command's too
        router.flush()
        os.dup2(router.saved_fd, 1)
    try:
        yield
    finally:
        router.plugin_owns = False
        if router.saved_fd is not None:
            router.flush()
            os.dup2(2, 1)


@contextmanager
def protocol_streams() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """stdin and stdout become a protocol's own (`hermes mcp serve` over stdio): the command reads
    and writes them through descriptors of its own, while descriptor 0 reads nothing, descriptor 1
    points at stderr and `sys.stdout` is stderr, so that nothing else (a plugin's print, a child
    process, C code, the CLI itself) can write into the protocol or read from it. Restored afterwards."""
    router = sys.stdout
    moved = isinstance(router, _Router) and router.saved_fd is not None
    if isinstance(router, _Router):
        router.flush()
    out_fd = os.dup(router.saved_fd if moved else 1)  # type: ignore[union-attr]
    in_fd = os.dup(0)
    saved_fd1 = None if moved else os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield os.fdopen(in_fd, "rb", closefd=False), os.fdopen(out_fd, "wb", closefd=False)
    finally:
        sys.stdout = router
        os.dup2(in_fd, 0)
        if saved_fd1 is not None:
            os.dup2(saved_fd1, 1)
            os.close(saved_fd1)
        os.close(in_fd)
        os.close(out_fd)
