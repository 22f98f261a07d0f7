"""README's Layout and docs/layout.md name every folder: a folder added to the package (or to the
repository) without its line fails here, so the map a reader opens first never leaves a room out."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hermes_core"


def package_folders() -> list[str]:
    """Every package folder of hermes_core, as `gateway/platforms/` (relative to hermes_core)."""
    return sorted(f"{path.parent.relative_to(PACKAGE).as_posix()}/" for path in PACKAGE.rglob("__init__.py")
                  if path.parent != PACKAGE)


def repository_folders() -> list[str]:
    """The top-level folders of the repository that git tracks (`.ci/` and the like aside)."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sorted({f"{line.split('/')[0]}/" for line in tracked.splitlines() if "/" in line and not line.startswith(".")})


def readme_layout() -> list[str]:
    """The first words of the lines of README's Layout block (`hermes_core/`, `_loading/`, ...)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Layout\n"):]
    block = section[section.index("```\n") + 4:]
    block = block[:block.index("```")]
    return [line.split()[0] for line in block.splitlines() if line.strip() and not line.startswith(" " * 10)]


def test_the_walk_sees_the_folders() -> None:
    assert {"_loading/", "_standins/", "hosting/", "gateway/platforms/"} <= set(package_folders())
    assert {"hermes_core/", "tests/", "docs/"} <= set(repository_folders())


def test_readme_layout_has_a_line_for_every_folder() -> None:
    named = set(readme_layout())
    missing = [folder for folder in package_folders() if folder not in named]
    missing += [folder for folder in repository_folders() if folder not in named]
    assert missing == [], "README.md's Layout needs a line for each of these folders"


def test_docs_layout_has_a_row_for_every_package_folder() -> None:
    rows = re.findall(r"^\| `([^`]+)`", (ROOT / "docs" / "layout.md").read_text(encoding="utf-8"), re.MULTILINE)
    missing = [folder for folder in package_folders() if folder not in rows]
    assert missing == [], "docs/layout.md needs a row for each of these folders"


def test_neither_names_a_folder_that_is_gone() -> None:
    """A line for a folder that was moved or removed is a wrong map, too."""
    folders = set(package_folders()) | set(repository_folders())
    stale = [name for name in readme_layout() if name.endswith("/") and name not in folders]
    rows = re.findall(r"^\| `([^`]+/)`", (ROOT / "docs" / "layout.md").read_text(encoding="utf-8"), re.MULTILINE)
    stale += [f"docs/layout.md: {name}" for name in rows if name not in folders]
    assert stale == []
