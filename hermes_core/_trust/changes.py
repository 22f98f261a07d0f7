"""What an update changes, against what is installed now: the files of the distribution (changed,
added, removed), the dependencies it declares, and the capabilities its plugin.yaml asks for."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .consent import capabilities_in
from .scan import members
from .verify import find_dist, record_digest

__all__ = ["update_changes"]

SHOWN = 4  # file names shown of each kind; the rest counted


def _names(paths: Iterable[str]) -> str:
    listed = sorted(paths)
    more = f", {len(listed) - SHOWN} more" if len(listed) > SHOWN else ""
    return ", ".join(listed[:SHOWN]) + more


def _requires(lines: Iterable[str]) -> set[str]:
    return {" ".join(line.split()) for line in lines}


def update_changes(name: str, wheel: Path, environment: str | None = None) -> list[str]:
    """One line per kind of change `wheel` brings against the installed `name`; [] when it is not installed."""
    dist = find_dist(name, environment)
    if dist is None:
        return []
    old = {str(f): f.hash.value for f in dist.files or [] if f.hash is not None and f.hash.mode == "sha256"
           and ".dist-info/" not in str(f) and not str(f).startswith("..")}
    new_files = dict(members(wheel))
    new = {path: record_digest(data) for path, data in new_files.items() if ".dist-info/" not in path
           and not path.split("/")[0].endswith(".data")}
    lines = []
    changed = [p for p in new if p in old and old[p] != new[p]]
    added, removed = [p for p in new if p not in old], [p for p in old if p not in new]
    parts = [f"{len(items)} {what} ({_names(items)})" for what, items in
             (("changed", changed), ("added", added), ("removed", removed)) if items]
    lines.append(f"{name} files: " + ("; ".join(parts) if parts else "the same"))
    metadata_file = next((data for path, data in new_files.items() if path.endswith(".dist-info/METADATA")), b"")
    new_requires = _requires(v for k, v in _headers(metadata_file) if k == "requires-dist")
    old_requires = _requires(dist.requires or [])
    for line in sorted(new_requires - old_requires):
        lines.append(f"{name} now requires {line}")
    for line in sorted(old_requires - new_requires):
        lines.append(f"{name} no longer requires {line}")
    installed = [(str(f), Path(str(f.locate())).read_bytes()) for f in dist.files or []
                 if f.name in ("plugin.yaml", "plugin.yml") and Path(str(f.locate())).is_file()]
    before = {c for ids in capabilities_in(installed).values() for c in ids}
    after = {c for ids in capabilities_in(new_files.items()).values() for c in ids}
    if after - before:
        lines.append(f"{name} asks for more capabilities: {', '.join(sorted(after - before))}")
    if before - after:
        lines.append(f"{name} no longer asks for: {', '.join(sorted(before - after))}")
    return lines


def _headers(data: bytes) -> list[tuple[str, str]]:
    from email.parser import BytesHeaderParser

    message = BytesHeaderParser().parsebytes(data)
    return [(key.lower(), value) for key, value in message.items()]
