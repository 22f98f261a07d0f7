"""What a person sees while the agent works: a spinner on a terminal, plain lines otherwise."""

from __future__ import annotations

import itertools
import json
import math
import sys
import threading
from typing import Any, TextIO

from .._interrupts import leave_sigint_to_the_main_thread

__all__ = ["Display", "format_cost"]

LINE = 100  # a tool's arguments or result are cut to this many characters, on one line


class Display:
    """Progress on `stream` (stderr by default, so stdout carries only the answer)."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.quiet = quiet
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def _line(self, text: str) -> None:
        if not self.quiet:
            self.stream.write(text + "\n")
            self.stream.flush()

    def working(self, what: str) -> None:
        """The model or a tool is working: a spinner on a terminal, one line otherwise."""
        self.done()
        if self.quiet:
            return
        if not self.tty:
            self._line(f"… {what}")
            return
        self._stop = threading.Event()
        stop = self._stop

        def spin() -> None:
            leave_sigint_to_the_main_thread()
            for frame in itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"):
                self.stream.write(f"\r{frame} {what}")
                self.stream.flush()
                if stop.wait(0.1):
                    break
            self.stream.write("\r\033[K")
            self.stream.flush()

        self._thread = threading.Thread(target=spin, daemon=True)
        self._thread.start()

    def done(self) -> None:
        if self._stop is not None and self._thread is not None:
            self._stop.set()
            self._thread.join()
        self._stop = self._thread = None

    def tool(self, name: str, arguments: Any) -> None:
        """A tool call, as the model asked for it."""
        self.done()
        self._line(f"→ {name} {one_line(arguments if isinstance(arguments, str) else str(arguments))}")

    def tool_result(self, name: str, result: str) -> None:
        """A tool's result cut to one line, or its failure (a `{"error": ...}` result)."""
        self.done()
        failure = tool_failure(result)
        if failure is not None:
            self._line(f"✗ {name} failed: {one_line(failure)}")
        else:
            self._line(f"← {name}: {one_line(result) or '(empty)'}")

    def note(self, text: str) -> None:
        self.done()
        self._line(f"· {text}")

    def usage(self, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        """The tokens and cost of a turn, shown after its answer."""
        self.done()
        money = f", {format_cost(cost)}" if cost is not None else ""
        self._line(f"· tokens: {input_tokens:,} in, {output_tokens:,} out{money}")


def one_line(text: str, width: int = LINE) -> str:
    """`text` with its whitespace runs (newlines too) made single spaces, cut to `width` with `…`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def tool_failure(result: str) -> str | None:
    """The error message of a failed tool call's result (`{"error": ...}`), else None."""
    if not result.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(result)
    except ValueError:
        return None
    if isinstance(value, dict) and value.get("error"):
        return str(value["error"])
    return None


def format_cost(cost: float) -> str:
    """Dollars with two significant digits below a cent, so a cheap turn never shows as `$0.0000`:
    `$0.000042`, `$0.0012`, `$0.0310`, `$1.25`; below a millionth, `<$0.000001`."""
    if cost <= 0:
        return "$0"
    if cost >= 1:
        return f"${cost:,.2f}"
    if cost >= 0.01:
        return f"${cost:.4f}"
    if cost < 1e-6:
        return "<$0.000001"
    decimals = 1 - math.floor(math.log10(cost))
    return f"${cost:.{decimals}f}"
