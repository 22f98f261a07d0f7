"""Meta-tests: every hook spec is documented with an example and exercised by a test."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from hermes_core import hookspecs

SPECS = {
    name: fn for name, fn in vars(hookspecs).items()
    if inspect.isfunction(fn) and hasattr(fn, f"{hookspecs.PROJECT_NAME}_spec")
}
TESTS = "\n".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py") if p.name != Path(__file__).name)


def test_the_hook_lists_match_the_specs() -> None:
    listed = {*hookspecs.REGISTRATION_HOOKS, *hookspecs.LIFECYCLE_HOOKS, "register_cli_commands"}
    assert listed == set(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_hook_spec_has_a_docstring_with_an_example(name: str) -> None:
    doc = inspect.getdoc(SPECS[name]) or ""
    assert doc.splitlines()[0].strip(), f"{name} has no one-line summary"
    assert "Example::" in doc, f"{name} has no example"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_hook_spec_is_exercised_by_a_test(name: str) -> None:
    assert f"{name}(" in TESTS or f'"{name}"' in TESTS, f"no test uses the {name} hook"
