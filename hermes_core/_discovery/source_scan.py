"""What a plugin's source says before it is imported: its kind, and the Hermes modules its
module-level code imports.

**Kind.** Hermes Agent decides that a plugin folder is a memory provider or a context engine
by reading it, not by importing it: its memory loader takes a `$HERMES_HOME/plugins/<name>/`
whose `__init__.py` mentions `register_memory_provider` or `MemoryProvider` in its first 8 KB,
its context-engine loader one that mentions `register_context_engine` or `ContextEngine`, and
a `plugin.yaml` without `kind` gets the same test. `kind_from_source` is that rule, so that
hermes-core finds and lists the same folder plugins as Hermes does. The kind it gives is a guess
for listing and selection only: loading a guessed plugin still runs all of its registration.

**Hermes imports.** `hermes_imports` reads the module-level imports of a plugin's first module
and of the modules of its own package that it imports in turn (skipping function bodies,
`if TYPE_CHECKING:` and `try` blocks that catch ImportError), and returns those of Hermes
modules that neither hermes-core nor a real installation answers: what the listing reports as
"needs the Hermes Agent host" before anything is imported.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .._hermes.host import HERMES_TOP_LEVEL, needs_hermes

if TYPE_CHECKING:
    import ast  # imported where it is used: only a file worth parsing (`_may_matter`) pays for it

__all__ = ["EXCLUSIVE_MARKERS", "SOURCE_KINDS", "exclusive_from_source", "hermes_imports", "kind_from_source",
           "module_origin"]

# The first match wins (a folder that mentions both is a memory provider, as for Hermes' manifests).
SOURCE_KINDS = (
    ("memory", ("register_memory_provider", "MemoryProvider")),
    ("context_engine", ("register_context_engine", "ContextEngine")),
    ("model-provider", ("ProviderProfile",)),  # Hermes' `providers.base.ProviderProfile`
)
_HEAD = 8192
_MAX_FILES = 64
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def kind_from_source(init: Path | None) -> str | None:
    """`memory` or `context_engine` when the first 8 KB of `init` mention that contract (Hermes' rule)."""
    if init is None:
        return None
    try:
        with open(init, "rb") as handle:
            head = handle.read(_HEAD).decode("utf-8", "replace")
    except OSError:
        return None
    for kind, markers in SOURCE_KINDS:
        if any(marker in head for marker in markers):
            return kind
    return None


# What makes a folder whose kind is read from its source Hermes' `exclusive` provider of a slot: its
# code reaches the slot's registrar on its ctx (`ctx.register_memory_provider(...)`, or through
# `getattr(ctx, "register_memory_provider")`), in the first 8 KB as Hermes reads them. Hermes'
# manifest reader also takes a bare `MemoryProvider` mention (its trap, oh-my-hermes #922: a tool
# plugin that names the class in passing loses its tools); such a plugin, and one implementing
# hermes-core's own `register_memory_provider` hook (`def register_memory_provider(ctx)`), stays a
# hint here, loaded through `plugins.enabled` with all it registers.
EXCLUSIVE_MARKERS = {"memory": "register_memory_provider"}
_HOOK_DEFINITION = re.compile(r"\bdef\s+register_memory_provider\b")


def exclusive_from_source(init: Path | None, kind: str) -> str:
    """`kind` when the first 8 KB of `init` call its slot's registrar (`EXCLUSIVE_MARKERS`), else ""."""
    marker = EXCLUSIVE_MARKERS.get(kind)
    if marker is None or init is None:
        return ""
    try:
        with open(init, "rb") as handle:
            head = handle.read(_HEAD).decode("utf-8", "replace")
    except OSError:
        return ""
    return kind if marker in _HOOK_DEFINITION.sub("", head) else ""


def module_origin(name: str, near: str | None = None) -> tuple[Path, Path | None] | None:
    """The source file of module `name` and the directory of its top-level package (None for a
    top-level module), found without importing anything: in the directory `near` (where its
    distribution is installed) when it is there, else through `importlib.util.find_spec` of the
    top-level name alone (a dotted name's packages are walked on disk; finding them would import them)."""
    parts = [p for p in name.split(".") if p]
    if not parts:
        return None
    top = _top_level(parts[0], near)
    if top is None:
        return None
    origin, locations = top
    root = origin.parent if origin.name == "__init__.py" else None
    for part in parts[1:]:
        found = None
        for base in map(Path, locations):
            if (base / part / "__init__.py").is_file():
                found, locations = base / part / "__init__.py", [str(base / part)]
                break
            if (base / f"{part}.py").is_file():
                found, locations = base / f"{part}.py", []
                break
        if found is None:
            return None
        origin = found
    return origin, root


def _top_level(name: str, near: str | None) -> tuple[Path, list[str]] | None:
    """A top-level module's source file and its package directories (plain `os.path` here: this
    runs for every installed plugin on every listing)."""
    if near is not None:
        package = os.path.join(near, name)
        if os.path.isfile(os.path.join(package, "__init__.py")):
            return Path(package, "__init__.py"), [package]
        if os.path.isfile(package + ".py"):
            return Path(package + ".py"), []
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin), list(spec.submodule_search_locations or [])


def _guarded(node: ast.Try) -> bool:
    """Whether a `try` block catches a failed import (its imports are the plugin's own business)."""
    import ast

    for handler in node.handlers:
        if handler.type is None:
            return True
        caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(c, ast.Name) and c.id in _IMPORT_ERRORS for c in caught):
            return True
    return False


def _type_checking(node: ast.If) -> bool:
    import ast

    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported."""
    import ast

    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _type_checking(node):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.With):
            yield from _module_level(node.body)
        elif isinstance(node, ast.Try):
            if not _guarded(node):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
            yield from _module_level(node.finalbody)


def hermes_imports(first: Path, package_root: Path | None, own: str) -> list[str]:
    """The unserved Hermes modules imported at module level by `first` and the modules of its own
    package (`package_root`, importable as `own`) that it imports, in the order they would run."""
    found: list[str] = []
    seen: set[Path] = set()

    def scan(path: Path, parts: list[str]) -> None:
        if path in seen or len(seen) >= _MAX_FILES:
            return
        seen.add(path)
        try:
            text = path.read_bytes().decode("utf-8", "replace").lstrip("\ufeff")
        except OSError:
            return
        if not _may_matter(text, own):
            return
        import ast

        try:
            tree = ast.parse(text, str(path))
        except (SyntaxError, ValueError):
            return
        here = parts if path.name == "__init__.py" else parts[:-1]  # the package this module is in
        for node in _module_level(tree.body):
            for name, inside in _targets(node, here, own):
                if inside is None:
                    if needs_hermes(name) and name not in found:
                        found.append(name)
                elif package_root is not None and (target := _file(package_root, inside)) is not None:
                    scan(target, inside)

    scan(first, [] if first.name == "__init__.py" or first.parent != package_root else [first.stem])
    return found


_IMPORTED = re.compile(r"^[ \t]*(?:from[ \t]+(\.|[A-Za-z_]\w*)|import[ \t]+([^#\n]+))", re.MULTILINE)


def _may_matter(text: str, own: str) -> bool:
    """Whether `text` imports anything the scan follows or reports: a relative import, its own
    package, or a Hermes top-level name (a quick look before parsing; most modules import neither)."""
    own_top = own.partition(".")[0]
    for match in _IMPORTED.finditer(text):
        if match.group(1):
            names = [match.group(1)]
        else:  # `import a.b as c, d`
            names = [n.split()[0].partition(".")[0] for n in match.group(2).split(",") if n.strip()]
        if any(n in (".", own_top) or n in HERMES_TOP_LEVEL for n in names):
            return True
    return False


def _file(root: Path, parts: list[str]) -> Path | None:
    """The source of the module at `parts` under package directory `root`, if it is there."""
    base = root.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if parts and base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _targets(node: ast.Import | ast.ImportFrom, here: list[str], own: str) -> Iterator[tuple[str, list[str] | None]]:
    """Each module `node` may import: its absolute name, and its parts inside the plugin's own
    package `own` (None for a module outside it). `from . import x` may import a submodule `x`."""
    import ast

    def inside(name: str) -> list[str] | None:
        if name == own:
            return []
        return name[len(own) + 1:].split(".") if name.startswith(own + ".") else None

    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, inside(alias.name)
        return
    if node.level:
        if node.level - 1 > len(here):
            return
        parts = here[:len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
    elif node.module:
        yield node.module, inside(node.module)
        own_parts = inside(node.module)
        if own_parts is None:
            return
        parts = own_parts
    else:
        return
    yield ".".join([own, *parts]), parts
    for alias in node.names:
        if alias.name != "*":
            yield ".".join([own, *parts, alias.name]), [*parts, alias.name]
