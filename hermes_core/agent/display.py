"""What a person sees while the agent works: a spinner on a terminal, plain lines otherwise."""

from __future__ import annotations

import itertools
import sys
import threading
from typing import Any, TextIO

__all__ = ["Display"]


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
        shown = arguments if isinstance(arguments, str) else str(arguments)
        self.done()
        self._line(f"→ {name} {shown[:120] + '…' if len(shown) > 120 else shown}")

    def note(self, text: str) -> None:
        self.done()
        self._line(f"· {text}")

    def usage(self, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        self.done()
        money = f", ${cost:.4f}" if cost is not None else ""
        self._line(f"· tokens: {input_tokens:,} in, {output_tokens:,} out{money}")
