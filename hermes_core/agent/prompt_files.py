"""The files the system prompt is built from, found and read as Hermes Agent does.

- `SOUL.md` of the home: the agent's identity (else the built-in one).
- One project context, the first found of: `.hermes.md` / `HERMES.md` (the nearest from the
  working folder up to the git root; the working folder only outside git), the AGENTS.md chain
  (in each folder from the git root down to the working folder the first of `AGENTS.override.md`,
  `AGENTS.md`, `agents.md`; an identical copy further down is skipped), `CLAUDE.md` / `claude.md`,
  `.cursorrules` with `.cursor/rules/*.mdc` (these two of the working folder only).
- `memories/MEMORY.md` and `memories/USER.md` of the home.

Each file is capped (`cap_for`), keeping its head and tail around a marker, and one with a
prompt-injection pattern is left out whole with one warning naming it and the pattern.

>>> found = read_prompt_files(home, Path.cwd(), max_chars=20_000)   # doctest: +SKIP
>>> [part.source for part in found.project]     # the git root's first, the working folder's last
['../../AGENTS.md', 'AGENTS.md']
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from .prompt_cache import MEMO_CHARS, Memo, signature, settled
from .prompt_scan import first_threat

__all__ = ["PromptFile", "LeftOut", "PromptFiles", "read_prompt_files", "cap_for", "truncate", "FILES",
           "PROJECT_HEADING"]

log = logging.getLogger("hermes_core.agent")

FILES = ("soul_md", "hermes_md", "agents_md", "claude_md", "cursorrules", "memory_md", "user_md")
MIN_CHARS, MAX_CHARS, WINDOW_SHARE, CHARS_PER_TOKEN = 20_000, 500_000, 0.06, 4
HEAD, TAIL = 0.7, 0.2  # of the cap, kept of a file that passes it
READ_BYTES = 8 * 1024 * 1024  # read of a file at most: its head and tail (the largest cap keeps 500,000 characters)
PROJECT_HEADING = ("# Project Context\n\nThe following project context files have been loaded and should be "
                   "followed:")
_MEMORY_HEADINGS = {"MEMORY.md": "MEMORY (your personal notes)", "USER.md": "USER PROFILE (who the user is)"}
_RULE = "═" * 46
_TEXTS, _MADE = Memo(256), Memo(256)  # a file's text by its path and signature; what a text made (prompt_cache)


@attrs.frozen
class PromptFile:
    """One file's text as it goes into the prompt: `source` is its label (its path from the working
    folder; the home's files by name), `chars` its length as read, `truncated` whether the cap cut it."""

    kind: str  # "soul", "project" or "memory"
    source: str
    path: str
    text: str
    chars: int
    truncated: bool = False


@attrs.frozen
class LeftOut:
    """A file found and not used: which, and why (an injection pattern, an unreadable file)."""

    source: str
    path: str
    reason: str


@attrs.frozen
class PromptFiles:
    """What was found: the identity (None: the built-in one), the project context's files, the
    memory files, and the files left out."""

    soul: PromptFile | None = None
    project: tuple[PromptFile, ...] = ()
    memory: tuple[PromptFile, ...] = ()
    left_out: tuple[LeftOut, ...] = ()


def cap_for(context_length: int | None, configured: int = 0) -> int:
    """Characters kept of each file: `configured` when set, else Hermes' share of the context window
    (6% of it in characters, between 20,000 and 500,000), else 20,000."""
    if configured > 0:
        return configured
    if not context_length or context_length <= 0:
        return MIN_CHARS
    return max(MIN_CHARS, min(int(context_length * CHARS_PER_TOKEN * WINDOW_SHARE), MAX_CHARS))


def truncate(text: str, label: str, path: str, max_chars: int) -> tuple[str, bool]:
    """`text` within `max_chars`: 70% of the cap from its head and 20% from its tail around a marker
    saying what was left out and where the whole file is."""
    if len(text) <= max_chars:
        return text, False
    head, tail = int(max_chars * HEAD), int(max_chars * TAIL)
    marker = (f"\n\n[...truncated {label}: kept {head}+{tail} of {len(text)} chars. The middle is omitted; "
              f"read the whole file at {path} when you need it.]\n\n")
    return text[:head] + marker + text[len(text) - tail:], True


_CUT = "prompt file %s cut to %d of its %d characters (context_file_max_chars allows more)"


def _warn_cut(path: str, chars: int, max_chars: int) -> None:
    log.warning(_CUT, path, int(max_chars * HEAD) + int(max_chars * TAIL), chars)


def _git_root(folder: str) -> str | None:
    """The nearest folder from `folder` up holding `.git`, or None (paths as strings: this runs at every start)."""
    candidate = folder
    while True:
        try:
            if os.path.exists(os.path.join(candidate, ".git")):
                return candidate
        except OSError:  # a parent the process may not look into: no repository there
            return None
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def _read(path: str) -> str | None:
    """The file's text, stripped (None: missing, not a regular file, unreadable, or empty); of a
    file past `READ_BYTES`, its head and tail (no cap keeps more). The text of a file unchanged since
    this process last read it is remembered (`prompt_cache`)."""
    try:
        sign = signature(path)
    except PermissionError:
        return None
    except OSError as exc:
        log.warning("prompt file %s not read: %s", path, exc)
        return None
    if sign is None:
        return None
    known = _TEXTS.get(path)
    if known is not None and known[0] == sign:
        return known[1]  # type: ignore[no-any-return]
    text = _read_file(path)
    if settled(sign) and (text is None or len(text) <= MEMO_CHARS):
        _TEXTS.put(path, (sign, text))
    return text


def _read_file(path: str) -> str | None:
    try:
        with open(path, "rb") as file:
            data = file.read(READ_BYTES + 1)
            if len(data) > READ_BYTES:
                file.seek(-READ_BYTES // 2, os.SEEK_END)
                data = data[: READ_BYTES // 2] + b"\n" + file.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None
    except OSError as exc:
        log.warning("prompt file %s not read: %s", path, exc)
        return None
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff").strip()
    return text or None


def _frontmatter_stripped(text: str) -> str:
    if not text.startswith("---"):
        return text
    end = text.find("\n---", 3)
    return (text[end + 4:].lstrip("\n") or text) if end != -1 else text


class _Reader:
    """Reads, scans and caps the files of one prompt; notes the ones left out."""

    def __init__(self, cwd: str, max_chars: int) -> None:
        self.cwd = cwd
        self.max_chars = max_chars
        self.left_out: list[LeftOut] = []
        self.key = ""  # the switch of the files being read (agent.prompt_files.<key>)

    def label(self, path: str) -> str:
        return os.path.relpath(path, self.cwd).replace(os.sep, "/")

    def file(self, kind: str, path: str, label: str | None = None, text: str | None = None,
             render: Callable[[str], str] | None = None) -> PromptFile | None:
        """`path` read (or `text` given), scanned, rendered and capped; None when absent or left out.
        What a text made is remembered (the same kind, label, path, cap and switch render it alike),
        its warnings said again each time."""
        text = _read(path) if text is None else text
        if text is None:
            return None
        label = label or self.label(path)
        key = (kind, label, path, self.max_chars, self.key, text)
        made = _MADE.get(key)
        if made is None:
            made = self._made(kind, path, label, text, render)
            if len(text) <= MEMO_CHARS:
                _MADE.put(key, made)
        found, left, warning = made
        if warning:
            log.warning(*warning)
        if left is not None:
            self.left_out.append(left)
        return found  # type: ignore[no-any-return]

    def _made(self, kind: str, path: str, label: str, text: str, render: Callable[[str], str] | None,
              ) -> tuple[PromptFile | None, LeftOut | None, tuple[Any, ...]]:
        """What `text` makes: the file for the prompt, or what was left out, and the warning to say."""
        body = render(text) if render else text
        body, cut = truncate(body, label, path, self.max_chars)
        threat = first_threat(body)  # what the model would read: a pattern past the cap never reaches it
        if threat is not None:
            return None, LeftOut(label, path, f"prompt injection: {threat}"), (
                "prompt file %s left out of the system prompt: it holds a prompt-injection pattern, %s "
                "(edit the file, or set agent.prompt_files.%s: false)", path, threat, self.key)
        warning: tuple[Any, ...] = ()
        if cut:
            warning = _CUT, path, int(self.max_chars * HEAD) + int(self.max_chars * TAIL), \
                len(render(text) if render else text)
        return PromptFile(kind, label, path, body, len(text), cut), None, warning

    def section(self, path: str, text: str | None = None) -> PromptFile | None:
        """A project file as Hermes renders it: `## <label>` and its text."""
        label = self.label(path)
        return self.file("project", path, label, text, lambda body: f"## {label}\n\n{body}")


def _hermes_md(reader: _Reader, root: str | None) -> list[PromptFile]:
    reader.key, folder = "hermes_md", reader.cwd
    while True:
        for name in (".hermes.md", "HERMES.md"):
            path = os.path.join(folder, name)
            text = _read(path)
            if text is not None:
                found = reader.section(path, _frontmatter_stripped(text))
                return [found] if found else []
        parent = os.path.dirname(folder)
        if root is None or folder == root or parent == folder:  # outside git: the working folder only
            return []
        folder = parent


def _agents_md(reader: _Reader, root: str | None) -> list[PromptFile]:
    cwd, reader.key = reader.cwd, "agents_md"
    chain = [cwd]
    if root is not None and root != cwd:
        chain = [root]
        for name in os.path.relpath(cwd, root).split(os.sep):
            chain.append(os.path.join(chain[-1], name))
    found: list[PromptFile] = []
    seen: set[str] = set()
    for folder in chain:
        for name in ("AGENTS.override.md", "AGENTS.md", "agents.md"):
            path = os.path.join(folder, name)
            text = _read(path)
            if text is None:
                continue
            if text not in seen:  # an identical copy (or a link) further down is read once
                seen.add(text)
                part = reader.section(path, text)
                if part is not None:
                    found.append(part)
            break
    joined = "\n\n".join(part.text for part in found)
    if len(found) > 1 and len(joined) > reader.max_chars:  # a deep tree does not multiply the budget
        text, _ = truncate(joined, "AGENTS.md (directory chain)", os.path.join(cwd, "AGENTS.md"), reader.max_chars)
        _warn_cut("AGENTS.md chain of " + cwd, len(joined), reader.max_chars)
        return [PromptFile("project", f"AGENTS.md chain ({len(found)} files)", found[-1].path, text,
                           sum(part.chars for part in found), True)]
    return found


def _claude_md(reader: _Reader) -> list[PromptFile]:
    reader.key = "claude_md"
    for name in ("CLAUDE.md", "claude.md"):
        found = reader.section(os.path.join(reader.cwd, name))
        if found is not None:
            return [found]
    return []


def _cursorrules(reader: _Reader) -> list[PromptFile]:
    reader.key = "cursorrules"
    paths = [os.path.join(reader.cwd, ".cursorrules")]
    rules = os.path.join(reader.cwd, ".cursor", "rules")
    if os.path.isdir(rules):
        paths += sorted(os.path.join(rules, name) for name in os.listdir(rules) if name.endswith(".mdc"))
    return [part for part in map(reader.section, paths) if part is not None]


def read_prompt_files(home: Path, cwd: Path, *, max_chars: int, enabled: Iterable[str] = FILES) -> PromptFiles:
    """The prompt's files for a conversation in `cwd` with home `home`, each within `max_chars`;
    `enabled` names the ones to look for (`FILES`: all)."""
    on = set(enabled)
    folder = os.path.realpath(cwd)
    reader = _Reader(folder, max_chars)
    reader.key = "soul_md"
    soul = reader.file("soul", os.path.join(home, "SOUL.md"), "SOUL.md") if "soul_md" in on else None
    project: list[PromptFile] = []
    if on & {"hermes_md", "agents_md", "claude_md", "cursorrules"}:
        root = _git_root(folder)
        finders: list[Callable[[], list[PromptFile]]] = [
            lambda: _hermes_md(reader, root) if "hermes_md" in on else [],
            lambda: _agents_md(reader, root) if "agents_md" in on else [],
            lambda: _claude_md(reader) if "claude_md" in on else [],
            lambda: _cursorrules(reader) if "cursorrules" in on else [],
        ]
        for find in finders:  # one project context: the first kind that gives a file
            project = find()
            if project:
                break
    memory = []
    for key, name in (("memory_md", "MEMORY.md"), ("user_md", "USER.md")):
        if key in on:
            reader.key, heading = key, _MEMORY_HEADINGS[name]

            def render(body: str, heading: str = heading) -> str:
                return f"{_RULE}\n{heading}\n{_RULE}\n{body}"

            part = reader.file("memory", os.path.join(home, "memories", name), name, render=render)
            if part is not None:
                memory.append(part)
    return PromptFiles(soul, tuple(project), tuple(memory), tuple(reader.left_out))
