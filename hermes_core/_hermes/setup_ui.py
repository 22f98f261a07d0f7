"""Hermes' `hermes_cli.setup` prompt helpers, for a platform's setup wizard (`setup_fn`): section
headers, one-line status messages, and prompts that never hang a process with no one at the
keyboard (`HERMES_NONINTERACTIVE=1` or a closed stdin answer the default). Colour only on a
terminal. Hermes' own setup sections (model, tools, ...) are not served."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["is_interactive_stdin", "is_noninteractive", "print_error", "print_header", "print_info", "print_success",
           "print_warning", "prompt", "prompt_choice", "prompt_yes_no"]


def _styled(text: str, code: str) -> str:
    return f"\033[{code}m{text}\033[0m" if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else text


def print_header(title: str, *, gap: bool = False) -> None:
    if gap:
        print()
    print()
    print(_styled(f"◆ {title}", "1;36"))


def print_info(text: str) -> None:
    print(_styled(f"  {text}", "2") if text else "")


def print_success(text: str) -> None:
    print(_styled(f"✓ {text}", "32"))


def print_warning(text: str) -> None:
    print(_styled(f"⚠ {text}", "33"))


def print_error(text: str) -> None:
    print(_styled(f"✗ {text}", "31"))


def is_interactive_stdin() -> bool:
    try:
        return bool(sys.stdin.isatty())
    except (AttributeError, ValueError):
        return False


def is_noninteractive() -> bool:
    """Whether no one can answer a prompt (`HERMES_NONINTERACTIVE=1`)."""
    return os.environ.get("HERMES_NONINTERACTIVE", "").strip().lower() in {"1", "true", "yes", "on"}


def prompt(question: str, default: str | None = None, password: bool = False) -> str:
    """A line of input (hidden for a `password`); `default` for an empty answer. Ctrl+C or a
    closed stdin ends the wizard (exit 1), as Hermes' does."""
    shown = _styled(f"{question} [{default}]: " if default else f"{question}: ", "33")
    try:
        if password:
            import getpass

            value = getpass.getpass(shown)
        else:
            value = input(shown)
    except (KeyboardInterrupt, EOFError):
        print()
        sys.exit(1)
    return value.strip() or default or ""


def prompt_yes_no(question: str, default: bool = True) -> bool:
    if is_noninteractive():
        return default
    hint = "Y/n" if default else "y/N"
    while True:
        try:
            value = input(_styled(f"{question} [{hint}]: ", "33")).strip().lower()
        except KeyboardInterrupt:
            print()
            sys.exit(1)
        except EOFError:
            print()
            return default
        answer = {"": default, "y": True, "yes": True, "n": False, "no": False}.get(value)
        if answer is not None:
            return answer
        print_error("Please enter 'y' or 'n'")


def prompt_choice(question: str, choices: list[Any], default: int = 0, description: str | None = None) -> int:
    """The index of one of `choices`, picked by number (`default` for an empty answer)."""
    if is_noninteractive():
        return default
    print(question)
    if description:
        print_info(description)
    for number, choice in enumerate(choices, 1):
        print(f"  {number}. {choice}{' (default)' if number - 1 == default else ''}")
    while True:
        try:
            value = input(_styled(f"Choose [1-{len(choices)}]: ", "33")).strip()
        except KeyboardInterrupt:
            print()
            sys.exit(1)
        except EOFError:
            return default
        if not value:
            return default
        if value.isdigit() and 1 <= int(value) <= len(choices):
            return int(value) - 1
        print_error(f"Please enter a number between 1 and {len(choices)}")
