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


@pytest.mark.parametrize("name", hookspecs.LIFECYCLE_HOOKS)
def test_every_lifecycle_hook_has_a_typed_call_with_the_specs_arguments(name: str) -> None:
    from hermes_core import LifecycleHooks

    method = getattr(LifecycleHooks, name, None)
    assert method is not None, f"LifecycleHooks has no method for the {name} hook"
    spec_args = list(inspect.signature(SPECS[name]).parameters)
    typed = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
    assert sorted(p.name for p in typed) == sorted(spec_args)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in typed)


def test_the_typed_calls_reach_the_callbacks_with_their_arguments() -> None:
    from hermes_core import HookRunner, LifecycleHooks

    runner = HookRunner(lambda: 0)
    seen = []
    for name in hookspecs.LIFECYCLE_HOOKS:
        runner.add(name, lambda name=name, **kwargs: seen.append((name, sorted(kwargs))), "p")
    hooks = LifecycleHooks(runner)
    for name in hookspecs.LIFECYCLE_HOOKS:
        arguments = {arg: {} if arg == "args" else [] if arg == "messages" else "x"
                     for arg in inspect.signature(SPECS[name]).parameters}
        getattr(hooks, name)(**arguments).run()
    assert [name for name, _ in seen] == list(hookspecs.LIFECYCLE_HOOKS)
    assert all(kwargs == sorted(inspect.signature(SPECS[name]).parameters) for name, kwargs in seen)
