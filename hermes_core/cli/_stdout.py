"""A command's stdout is its output: what plugin code prints goes to stderr.

`hermes plugins doctor --json | jq`, `hermes run "..." > answer.txt`: a plugin that prints a
debug line while it loads or runs must not corrupt what the command writes. While a command
runs, `sys.stdout` is a router: writes made by the CLI's own output (click, hermes_core) reach
the real stdout; anyone else's (a plugin's `print`, a logging handler on `sys.stdout`) go to
stderr, where the user still sees them. A plugin's own CLI command
(`ctx.register_cli_command`) owns stdout while its handler runs: its output is the command's.
Writes to the file descriptor itself (a subprocess, C code) are not routed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["routed", "plugin_owns_stdout"]

_OURS = ("click", "hermes_core")


class _Router:
    """`sys.stdout` during a command: the real stdout for the CLI's own writes, stderr for the rest."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.plugin_owns = False

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


@contextmanager
def routed() -> Iterator[None]:
    """Route `sys.stdout` for the duration of a command (restored afterwards)."""
    real = sys.stdout
    if real is None or isinstance(real, _Router):
        yield
        return
    sys.stdout = _Router(real, sys.stderr)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _Router):
            sys.stdout.flush()
        sys.stdout = real


@contextmanager
def plugin_owns_stdout() -> Iterator[None]:
    """A plugin's own CLI command runs: everything it prints is the command's output."""
    router = sys.stdout
    if not isinstance(router, _Router):
        yield
        return
    router.plugin_owns = True
    try:
        yield
    finally:
        router.plugin_owns = False
