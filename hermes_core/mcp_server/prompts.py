"""Slash commands as MCP prompts, with the arguments their `args_hint` names.

A hint is read as a command line's usage: `<city>` is a required argument, `[days]` an optional
one, `[--units <metric|imperial>]` an option, and `a|b|c` the values an argument takes (which
completions offer). Getting the prompt puts the arguments back in that order, as the text the
command gets: `Paris 3 --units metric` (a value with spaces or quotes in shell quoting, `'New York'`,
which `shlex.split` reads back). A hint that names nothing (or none at all) is one
argument, `text`, the command's whole text.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

import attrs

from hermes_core import Command

__all__ = ["PromptArgument", "arguments", "command_text"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@attrs.frozen
class PromptArgument:
    name: str
    required: bool
    option: bool = False  # given as `--name value`
    choices: tuple[str, ...] = ()
    description: str = ""


def _groups(hint: str) -> list[tuple[str, str]]:
    """The top-level `<...>` and `[...]` groups of a hint: (bracket, content)."""
    found, depth, start, opener = [], 0, 0, ""
    for index, char in enumerate(hint):
        if char in "<[":
            if depth == 0:
                start, opener = index + 1, char
            depth += 1
        elif char in ">]" and depth:
            depth -= 1
            if depth == 0:
                found.append((opener, hint[start:index].strip()))
    return found


def arguments(command: Command) -> list[PromptArgument]:
    """The prompt arguments of `command` (see the module)."""
    if command.argument_mode == "none":
        return []
    parsed: list[PromptArgument] = []
    for number, (bracket, content) in enumerate(_groups(command.args_hint or ""), 1):
        option = content.startswith("--")
        head, _, rest = content.lstrip("-").partition(" ")
        values = rest.strip(" <>[]") if option else head
        choices = tuple(v for v in values.split("|") if v) if "|" in values else ()
        name = head if _NAME.fullmatch(head) and not (choices and not option) else f"arg{number}"
        if name in {a.name for a in parsed}:
            name = f"{name}{number}"
        parsed.append(PromptArgument(name, bracket == "<", option, choices, content))
    if not parsed:
        return [PromptArgument("text", command.argument_mode == "required",
                               description=command.args_hint or "the command's text")]
    return parsed


def command_text(command: Command, given: Mapping[str, str]) -> str:
    """The command's text for the arguments `given`; `ValueError` naming a missing required
    argument or one the prompt does not have."""
    wanted = arguments(command)
    unknown = sorted(set(given) - {a.name for a in wanted})
    if unknown:
        raise ValueError(f"/{command.name} has no argument {', '.join(map(repr, unknown))} "
                         f"(its arguments: {', '.join(a.name for a in wanted) or 'none'})")
    words: list[str] = []
    for argument in wanted:
        value = str(given.get(argument.name, "")).strip()
        if not value:
            if argument.required:
                raise ValueError(f"/{command.name} needs the argument {argument.name!r}")
            continue
        words += [f"--{argument.name}", value] if argument.option else [value]
    if not _groups(command.args_hint or ""):  # the one `text` argument: the command's whole text, as given
        return " ".join(words)
    return " ".join(shlex.quote(word) if any(c.isspace() or c in "'\"" for c in word) else word for word in words)
