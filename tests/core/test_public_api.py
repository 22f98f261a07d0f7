"""The public API is enough: the built-in plugins use only what `hermes_core` exports, and
the tests (like any plugin author) import no private module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import hermes_core

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
             if module != "hermes_core" or not set(names) <= set(hermes_core.__all__)]
    assert wrong == []


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


def test_no_test_module_imports_another_and_shared_fixtures_live_in_helpers_or_conftest() -> None:
    """Neither a test module nor a plugin source it writes (a string) imports a test module: what
    tests share is in tests/helpers or conftest.py."""
    imports_a_test = re.compile(r"^\s*(?:from|import)\s+tests(?:\.\w+)*\.test_\w+", re.M)
    modules = sorted(TESTS.rglob("*.py"))
    assert len([m for m in modules if m.name.startswith("test_")]) > 40  # the walk reads the suite
    wrong = [f"{path.relative_to(ROOT)}: {match.group(0).strip()}" for path in modules
             for match in imports_a_test.finditer(path.read_text(encoding="utf-8"))]
    wrong += [f"{path.relative_to(ROOT)}:{node.lineno}: from . import" for path in modules
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.ImportFrom) and node.level and path.name.startswith("test_")
              and (node.module or "").startswith("test_")]
    assert wrong == []


def test_the_provider_base_classes_are_a_public_module() -> None:
    from hermes_core import providers

    assert "providers" in hermes_core.__all__ and hermes_core.providers is providers
    assert {"WebSearchProvider", "SecretSource", "FetchResult", "ErrorKind"} <= set(providers.__all__)
    assert all(isinstance(getattr(providers, name), type) for name in providers.__all__)


def test_the_structured_input_blocks_are_exported_with_the_results() -> None:
    assert {"PluginLlmTextInput", "PluginLlmImageInput", "PluginLlmStructuredResult"} <= set(hermes_core.__all__)
    assert hermes_core.PluginLlmImageInput().mime_type == "image/png"
