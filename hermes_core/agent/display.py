"""What a person sees while the agent works: a spinner on a terminal, plain lines otherwise;
the answer on the answer stream (stdout), streamed as it arrives when that is a terminal."""

from __future__ import annotations

import itertools
import json
import math
import sys
import threading
from typing import Any, TextIO

from hermes_core import leave_sigint_to_the_main_thread, result_text
from hermes_core.hosting import cancel_check

__all__ = ["Display", "Relayed", "format_cost"]

LINE = 100  # a tool's arguments or result are cut to this many characters, on one line


class Display:
    """Progress on `stream` (stderr by default), the answer on `answers` (stdout by default).

    On a terminal the answer is streamed: each piece is written as it arrives (`stream_delta`),
    and `answer` then only ends its line; elsewhere (a pipe, a file) `answer` writes it whole.
    `quiet` shows no progress and streams nothing (a library host that prints the answer itself)."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, answers: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.answers = answers or sys.stdout
        self.tty = _isatty(self.stream)
        self.quiet = quiet
        self.streams_answers = not quiet and _isatty(self.answers)
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._what = ""  # what the spinner says
        self._open = False  # a streamed answer's line is not ended yet
        self._streamed: str | None = None  # the text of the last stream that finished

    def _line(self, text: str) -> None:
        if not self.quiet:
            self._end_answer_line()
            self.stream.write(text + "\n")
            self.stream.flush()

    def _end_answer_line(self) -> None:
        if self._open:
            self._open = False
            self.answers.write("\n")
            self.answers.flush()

    # -- the answer -----------------------------------------------------------------------------

    def stream_delta(self, text: str) -> None:
        """A piece of the answer, as it arrives (shown on a terminal only)."""
        if not self.streams_answers:
            return
        self.done()
        self.answers.write(text)
        self.answers.flush()
        self._open = True

    def stream_end(self, text: str, finished: bool, error: str | None) -> None:
        """A streamed answer ended: whole (`finished`), or broken off (`error` says why)."""
        if not self.streams_answers:
            return
        self._streamed = text if finished and text else None
        if not finished:
            self._end_answer_line()
            if text:
                self._line(f"✗ the answer broke off ({error or 'no reason given'})")

    def answer(self, text: str) -> None:
        """The turn's final answer (even when `quiet`): only the end of its line when it was just
        streamed as it is, else the text (a note first when a plugin changed what was streamed)."""
        streamed, self._streamed = self._streamed, None
        self.done()
        self._end_answer_line()
        if streamed == text:  # the streamed text is the answer: its line is ended, nothing more
            return
        if streamed is not None and not self.quiet:
            self._line("· a plugin rewrote the answer (transform_llm_output); as stored:")
        self.answers.write(text + "\n")
        self.answers.flush()

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
        self._what = what

        def spin() -> None:
            leave_sigint_to_the_main_thread()
            for frame in itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"):
                self.stream.write(f"\r{frame} {self._what}\033[K")  # what a longer text left is cleared
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

    def tool_progress(self, name: str, progress: float, total: float | None, message: str, *,
                      call_id: str = "") -> None:
        """A running tool's progress report (`ctx.report_progress`): the spinner's text, on a terminal."""
        self._what = one_line(f"running {name}: {progress_text(progress, total, message)}")

    def tool(self, name: str, arguments: Any, *, call_id: str = "") -> None:
        """A tool call, as the model asked for it (text streamed before it was not the answer);
        `call_id` is the model's id of the call."""
        self.done()
        self._streamed = None
        self._line(f"→ {name} {one_line(arguments if isinstance(arguments, str) else str(arguments))}")

    def tool_result(self, name: str, result: str, *, call_id: str = "") -> None:
        """A tool's result cut to one line, or its failure (a `{"error": ...}` result)."""
        self.done()
        failure = tool_failure(result)
        if failure is not None:
            self._line(f"✗ {name} failed: {one_line(failure)}")
        else:
            self._line(f"← {name}: {one_line(result_text(result)) or '(empty)'}")

    def note(self, text: str) -> None:
        self.done()
        self._line(f"· {text}")

    def usage(self, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        """The tokens and cost of a turn, shown after its answer."""
        self.done()
        money = f", {format_cost(cost)}" if cost is not None else ""
        self._line(f"· tokens: {input_tokens:,} in, {output_tokens:,} out{money}")


class Relayed(Display):
    """The display of a host that shows the turn elsewhere (a server's events, an editor's
    updates): nothing is printed, the answer streams (`streams`) into `delta(text)` and each tool
    call into `started` / `finished`, which a subclass sends on; and each step first checks
    whether the turn was stopped (`hosting.Cancel`), so a stopped turn ends at its next one."""

    def __init__(self, streams: bool = True) -> None:
        super().__init__(quiet=True)
        self.streams_answers = streams

    def delta(self, text: str) -> None:
        """A piece of the answer."""

    def started(self, name: str, arguments: Any, call_id: str) -> None:
        """A tool call begins."""

    def finished(self, name: str, result: str, call_id: str) -> None:
        """A tool call answered."""

    def progressed(self, name: str, call_id: str, progress: float, total: float | None, message: str) -> None:
        """A running tool call reported its progress."""

    def tool_progress(self, name: str, progress: float, total: float | None, message: str, *,
                      call_id: str = "") -> None:
        self.progressed(name, call_id, progress, total, message)

    def stream_delta(self, text: str) -> None:
        cancel_check()
        self.delta(text)

    def stream_end(self, text: str, finished: bool, error: str | None) -> None:
        pass

    def answer(self, text: str) -> None:
        pass

    def working(self, what: str) -> None:
        cancel_check()

    def tool(self, name: str, arguments: Any, *, call_id: str = "") -> None:
        cancel_check()
        self.started(name, arguments, call_id)

    def tool_result(self, name: str, result: str, *, call_id: str = "") -> None:
        self.finished(name, result, call_id)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or closed
        return False


def progress_text(progress: float, total: float | None, message: str) -> str:
    """A progress report as a person reads it: `message (3/10)`, or the count alone."""
    count = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
    return f"{message} ({count})" if message else count


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
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
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
