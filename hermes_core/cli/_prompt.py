"""The `hermes chat` prompt: line editing, a history kept in `$HERMES_HOME/chat_history` and
completion of `/` commands, through `readline` where the platform has it (plain `input()` where
it does not, or when stdin is not a terminal)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["HISTORY_FILE", "HISTORY_LENGTH", "Prompt"]

HISTORY_FILE = "chat_history"
HISTORY_LENGTH = 1000  # lines kept in the history file


class Prompt:
    """Reads the chat's lines; `close()` writes the history. Use as a context manager.

    >>> with Prompt(home, ["/help", "/exit"]) as prompt:   # doctest: +SKIP
    ...     line = prompt.read("you> ")
    """

    def __init__(self, home: Path, commands: Sequence[str], *, interactive: bool | None = None) -> None:
        self.history = home / HISTORY_FILE
        self.commands = sorted(commands)
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self._readline: ModuleType | None = None
        self._matches: list[str] = []
        if self.interactive:
            self._readline = _setup_readline(self.history, self._complete)

    def __enter__(self) -> Prompt:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, prompt: str = "you> ") -> str:
        """One line (`EOFError` at the end of input, `KeyboardInterrupt` on Ctrl-C)."""
        return input(prompt if self.interactive else "")

    def close(self) -> None:
        """Write the history (bounded to `HISTORY_LENGTH` lines); a failure is one warning line."""
        readline, self._readline = self._readline, None
        if readline is None:
            return
        try:
            self.history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(str(self.history))
        except OSError as exc:
            sys.stderr.write(f"hermes: warning: chat history not saved to {self.history}: {exc}\n")

    def _complete(self, text: str, state: int) -> str | None:
        """readline's completer: `/` commands, at the start of the line only."""
        if state == 0:
            readline = self._readline
            at_start = readline is None or not readline.get_line_buffer()[: readline.get_begidx()].strip()
            wanted = at_start and text.startswith("/")
            self._matches = [c + " " for c in self.commands if c.startswith(text)] if wanted else []
        return self._matches[state] if state < len(self._matches) else None


def _setup_readline(history: Path, completer: Any) -> ModuleType | None:
    """`readline` with the history read, its length bounded and Tab completing; None without it."""
    try:
        import readline
    except ImportError:  # Windows, or a Python built without it: plain input() still works
        return None
    readline.set_history_length(HISTORY_LENGTH)
    if history.is_file():
        try:
            readline.read_history_file(str(history))
        except OSError as exc:
            sys.stderr.write(f"hermes: warning: chat history {history} not read: {exc}\n")
    readline.set_completer(completer)
    readline.set_completer_delims(" \t\n")  # `/` and `-` belong to the command's name
    if "libedit" in (readline.__doc__ or ""):  # macOS' system Python
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")
    return readline
