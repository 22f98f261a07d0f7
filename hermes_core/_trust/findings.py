"""What a check found (`Finding`) and what it means for the install (`verdict`)."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["BLOCK", "ASK", "NOTE", "LEVELS", "Finding", "verdict"]

BLOCK, ASK, NOTE = "block", "ask", "note"
LEVELS = (NOTE, ASK, BLOCK)  # from the least to the most serious


@attrs.frozen
class Finding:
    """One thing a check found: at which `level`, by which `rule`, in which `file` (inside the
    distribution `dist`) at which `line` (0: the file as a whole), and `why` it matters."""

    level: str
    rule: str
    file: str
    line: int
    why: str
    dist: str = ""

    def where(self) -> str:
        name = f"{self.dist}: {self.file}" if self.dist else self.file
        return f"{name}:{self.line}" if self.line else name

    def text(self) -> str:
        return f"{self.level:5}  {self.where()}  {self.rule}: {self.why}"

    def as_dict(self) -> dict[str, object]:
        return attrs.asdict(self)


def verdict(findings: Iterable[Finding]) -> str:
    """`block` or `ask` (the most serious level among `findings`), or `ok` when nothing asks."""
    level = max((f.level for f in findings), key=LEVELS.index, default=NOTE)
    return "ok" if level == NOTE else level
