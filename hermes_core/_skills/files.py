"""A skill's own files, read only from inside its folder (Hermes' `_serve_skill_file` rule).

A `file_path` with a `..` part is refused before anything is looked at; any other path is joined
to the skill's folder and resolved (symbolic links followed), and must still be inside the
resolved folder: an absolute path or a link out of the folder is refused.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Any

__all__ = ["inside", "linked_files", "available_files", "serve_file"]

# Hermes' linked-file groups, in its order: (folder, suffixes (None: any), searched recursively)
GROUPS = (("references", (".md",), False),
          ("templates", (".md", ".py", ".yaml", ".yml", ".json", ".tex", ".sh"), True),
          ("assets", None, True),
          ("scripts", (".py", ".sh", ".bash", ".js", ".ts", ".rb"), False))
OTHER = (".md", ".py", ".yaml", ".yml", ".json", ".tex", ".sh")


def inside(folder: Path, file_path: str) -> Path | str:
    """The file `file_path` names in `folder`, or why it may not be read (one line)."""
    if ".." in PurePath(file_path).parts:
        return "Path traversal ('..') is not allowed."
    root = folder.resolve()
    target = (folder / file_path).resolve()
    try:
        target.relative_to(root)
    except ValueError:
        return f"Path escapes allowed directory: {file_path!r} is outside {root}"
    return target


def _files(folder: Path, recursive: bool) -> list[Path]:
    root = folder.resolve()
    found = folder.rglob("*") if recursive else folder.glob("*")
    kept = []
    for path in found:
        try:
            if path.is_file() and path.resolve().is_relative_to(root):
                kept.append(path)
        except OSError:
            continue
    return kept


def linked_files(folder: Path) -> dict[str, list[str]]:
    """The skill's support files by group (`references`, `templates`, `assets`, `scripts`), as
    POSIX paths relative to its folder; groups with none are left out."""
    groups: dict[str, list[str]] = {}
    for name, suffixes, recursive in GROUPS:
        sub = folder / name
        if not sub.is_dir() or not (sub.resolve()).is_relative_to(folder.resolve()):
            continue
        paths = sorted(p.relative_to(folder).as_posix() for p in _files(sub, recursive)
                       if suffixes is None or p.suffix in suffixes)
        if paths:
            groups[name] = paths
    return groups


def available_files(folder: Path) -> dict[str, list[str]]:
    """Every file of the skill but SKILL.md, outside hidden folders: the groups, and `other`."""
    groups = linked_files(folder)
    grouped = {path for paths in groups.values() for path in paths}
    other = sorted(p.relative_to(folder).as_posix() for p in _files(folder, True)
                   if p.name != "SKILL.md" and p.suffix in OTHER
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts)
                   and p.relative_to(folder).as_posix() not in grouped
                   and p.relative_to(folder).parts[0] not in {name for name, _, _ in GROUPS})
    return {**groups, **({"other": other} if other else {})}


def serve_file(folder: Path, file_path: str, label: str, *, hint: str | None = None,
               listing: bool = True) -> dict[str, Any]:
    """Hermes' `skill_view(name, file_path)` result for one file of the skill in `folder`."""
    extra = {"hint": hint} if hint else {}
    target = inside(folder, file_path)
    if isinstance(target, str):
        return {"success": False, "error": target, **extra}
    if not target.is_file():
        more = {"available_files": available_files(folder),
                "hint": "Use one of the available file paths listed above"} if listing else extra
        return {"success": False, "error": f"File '{file_path}' not found in skill '{label}'.", **more}
    try:
        raw = target.read_bytes()
    except OSError as exc:
        return {"success": False, "error": f"Failed to read '{file_path}': {exc.strerror or exc}"}
    if b"\x00" in raw[:8192]:
        return {"success": True, "name": label, "file": file_path, "is_binary": True,
                "content": f"[Binary file: {target.name}, size: {len(raw)} bytes]"}
    return {"success": True, "name": label, "file": file_path,
            "content": raw.decode("utf-8-sig", errors="replace"), "file_type": target.suffix,
            "_source_path": str(target)}
