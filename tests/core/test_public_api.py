"""The public API is enough: the built-in plugins use only what `hermes_core` exports, and
the tests (like any plugin author) import no private module, nor one another."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import hermes_core
from hermes_core import hosting

ROOT = Path(__file__).resolve().parents[2]


def hermes_imports(folder: Path) -> list[tuple[str, int, str, list[str]]]:
    """Every import of hermes_core in the Python files under `folder`: (file, line, module, names)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "hermes_core":
                found.append((path.name, node.lineno, node.module, [alias.name for alias in node.names]))
            elif isinstance(node, ast.Import):
                found += [(path.name, node.lineno, alias.name, []) for alias in node.names
                          if alias.name.split(".")[0] == "hermes_core"]
    return found


def test_the_builtin_plugins_import_only_names_hermes_core_exports() -> None:
    imports = hermes_imports(ROOT / "hermes_plugins_builtin")
    assert imports, "the built-in plugins import nothing from hermes_core: the check would prove nothing"
    wrong = [f"{file}:{line}: from {module} import {', '.join(names)}" for file, line, module, names in imports
             if not public(module, names)]
    assert wrong == []


def public(module: str, names: list[str]) -> bool:
    """An export of `hermes_core`, of `hermes_core.hosting` or of the API server's package, or a
    module of the gateway's public package (Hermes' names)."""
    if module == "hermes_core":
        return set(names) <= set(hermes_core.__all__)
    if module == "hermes_core.hosting":
        return set(names) <= set(hosting.__all__)
    if module in ("hermes_core.api_server", "hermes_core.cron", "hermes_core.acp_server"):
        import importlib

        return set(names) <= set(importlib.import_module(module).__all__)
    return module.split(".")[:2] == ["hermes_core", "gateway"] and not any(
        part.startswith("_") for part in module.split("."))


def test_every_name_the_host_layer_exports_resolves() -> None:
    assert {"write_json", "locked", "only_one", "is_loopback", "secret_matches", "until_signal", "serve_asgi",
            "Backoff", "ToolSelection"} <= set(hosting.__all__)
    assert [name for name in hosting.__all__ if getattr(hosting, name, None) is None] == []


def test_every_exported_name_resolves() -> None:
    missing = []
    for name in hermes_core.__all__:
        try:
            getattr(hermes_core, name)
        except (AttributeError, ImportError):
            missing.append(name)
    assert missing == []


TESTS = ROOT / "tests"


@pytest.mark.parametrize("module", sorted({m for _, _, m, _ in hermes_imports(TESTS)}))
def test_the_tests_import_no_private_module(module: str) -> None:
    assert not any(part.startswith("_") for part in module.split(".")), f"a test imports the private {module}"


IMPORTS_A_TEST = re.compile(r"^\s*(?:from\s+tests(?:\.\w+)*\.test_\w+|from\s+tests(?:\.\w+)*\s+import\s+[^\n]*"
                            r"\btest_\w+|import\s+tests(?:\.\w+)*\.test_\w+)", re.M)


def is_a_test_module(name: str) -> bool:
    return name.split(".")[0] == "tests" and any(part.startswith("test_") for part in name.split("."))


def absolute(node: ast.ImportFrom, package: tuple[str, ...]) -> str:
    """The module a `from ... import` in `package` imports from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    return ".".join((*package[:len(package) - node.level + 1], *filter(None, [node.module])))


def imports_of_test_modules(folder: Path) -> list[str]:
    """Where a module under `folder` (the `tests` package) imports a test module: in its code
    (relative imports resolved, `from tests.x import test_y` included) or in a plugin source it
    writes (a string)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        parts = (folder.name, *path.relative_to(folder).with_suffix("").parts)
        package = parts[:-1]  # a module's package, or an __init__'s own
        where = path.relative_to(folder.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = absolute(node, package)
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [f"{where}:{node.lineno}: a plugin source: {match.group(0).strip()}"
                          for match in IMPORTS_A_TEST.finditer(node.value)]
                continue
            else:
                continue
            found += [f"{where}:{node.lineno}: imports {name}" for name in names if is_a_test_module(name)][:1]
    return found


def test_the_import_check_finds_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    folder = tmp_path / "tests"
    (folder / "core").mkdir(parents=True)
    modules = {  # {b} and {c}: so that this file's own strings import no test module
        "core/test_a.py": "from tests.core.{b} import X\nimport tests.core.{b}\nfrom tests.core import {b}\n"
                          "from .{b} import X\nfrom . import {b}\nfrom ..core.{b} import X\n"
                          "SOURCE = \"import os\\nfrom tests.{c} import Y\\n\"\n",
        "core/test_b.py": "from tests.helpers import X\nfrom .. import helpers\nfrom . import conftest\n"
                          "SOURCE = 'from tests.helpers import Y'\n",
    }
    for name, text in modules.items():
        (folder / name).write_text(text.format(b="test_b", c="test_c"), encoding="utf-8")
    assert [line.split(": ", 1)[0] for line in imports_of_test_modules(folder)] == [
        f"tests/core/test_a.py:{n}" for n in range(1, 8)]


def test_no_test_module_imports_another_and_shared_fixtures_live_in_helpers_or_conftest() -> None:
    """Neither a test module nor a plugin source it writes imports a test module: what tests share
    is in tests/helpers or conftest.py."""
    assert len(list(TESTS.rglob("test_*.py"))) > 40  # the walk reads the suite
    assert imports_of_test_modules(TESTS) == []


def test_the_provider_base_classes_are_a_public_module() -> None:
    from hermes_core import providers

    assert "providers" in hermes_core.__all__ and hermes_core.providers is providers
    assert {"WebSearchProvider", "SecretSource", "FetchResult", "ErrorKind"} <= set(providers.__all__)
    assert all(isinstance(getattr(providers, name), type) for name in providers.__all__)


def test_the_structured_input_blocks_are_exported_with_the_results() -> None:
    assert {"PluginLlmTextInput", "PluginLlmImageInput", "PluginLlmStructuredResult"} <= set(hermes_core.__all__)
    assert hermes_core.PluginLlmImageInput().mime_type == "image/png"
