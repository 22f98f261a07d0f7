"""Meta-tests: every hook spec is documented with an example and fired by a test: a lifecycle
hook by a test whose `fires` marker names it (the marker is checked while the test runs:
`tests/conftest.py`), a registration or CLI hook by loading a plugin that implements them all."""

from __future__ import annotations

import importlib
import inspect
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from hermes_core import Command, PluginManager, Tool, hookimpl, hookspecs

SPECS = {
    name: fn for name, fn in vars(hookspecs).items()
    if inspect.isfunction(fn) and hasattr(fn, f"{hookspecs.PROJECT_NAME}_spec")
}
TESTS = Path(__file__).resolve().parents[1]


def test_the_hook_lists_match_the_specs() -> None:
    listed = {*hookspecs.REGISTRATION_HOOKS, *hookspecs.LIFECYCLE_HOOKS, "register_cli_commands"}
    assert listed == set(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_hook_spec_has_a_docstring_with_an_example(name: str) -> None:
    doc = inspect.getdoc(SPECS[name]) or ""
    assert doc.splitlines()[0].strip(), f"{name} has no one-line summary"
    assert "Example::" in doc, f"{name} has no example"


def functions_of_tests(module: Any) -> Iterator[tuple[str, Any]]:
    """A test module's test functions and test methods, by name."""
    for name, value in vars(module).items():
        if name.startswith("test_") and inspect.isfunction(value):
            yield name, value
        elif name.startswith("Test") and inspect.isclass(value):
            yield from ((f"{name}.{n}", v) for n, v in vars(value).items() if n.startswith("test_"))


def fired_by_tests() -> dict[str, list[str]]:
    """Each hook and the tests whose `fires` marker names it, read from the marks of every test
    module's functions (as pytest collects them)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("test_*.py")):
        module = importlib.import_module(".".join(("tests", *path.relative_to(TESTS).with_suffix("").parts)))
        for name, function in functions_of_tests(module):
            for mark in getattr(function, "pytestmark", []):
                if mark.name == "fires":
                    for hook in mark.args:
                        found[hook].append(f"{path.relative_to(TESTS)}::{name}")
    return found


def test_every_lifecycle_hook_is_fired_by_a_test() -> None:
    fired = fired_by_tests()
    assert "pre_tool_call" in fired and "agent_loop_stopped" in fired  # the markers are read
    assert [hook for hook in hookspecs.LIFECYCLE_HOOKS if hook not in fired] == []
    assert sorted(set(fired) - set(hookspecs.LIFECYCLE_HOOKS)) == []  # a marker names only real hooks


class EveryRegistrationHook:
    """A plugin implementing every registration hook and the CLI hook, each noting its call."""

    def __init__(self) -> None:
        self.called: list[tuple[str, str]] = []

    def register(self, ctx: Any) -> None:
        self.called.append(("register", ctx.plugin_id))
        ctx.register_command("plain", lambda raw: "plain")

    @hookimpl
    def register_tool(self, ctx: Any) -> Tool:
        self.called.append(("register_tool", ctx.plugin_id))
        return Tool("echo", "t", {"name": "echo"}, lambda args, **kw: "{}")

    @hookimpl
    def register_command(self, ctx: Any) -> Command:
        self.called.append(("register_command", ctx.plugin_id))
        return Command("shout", lambda raw: raw.upper())

    @hookimpl
    def register_context_engine(self, ctx: Any) -> None:
        self.called.append(("register_context_engine", ctx.plugin_id))

    @hookimpl
    def register_memory_provider(self, ctx: Any) -> None:
        self.called.append(("register_memory_provider", ctx.plugin_id))

    @hookimpl
    def register_cli_commands(self, cli: click.Group, ctx: Any) -> None:
        self.called.append(("register_cli_commands", ctx.plugin_id))
        cli.add_command(click.Command("extra"))


def test_every_registration_and_cli_hook_is_called_with_the_plugins_own_ctx() -> None:
    plugin = EveryRegistrationHook()
    implemented = {name for name in vars(EveryRegistrationHook) if name.startswith("register")}
    assert implemented == {*hookspecs.REGISTRATION_HOOKS, *hookspecs.CLI_HOOKS}
    manager = PluginManager(discover_plugins=False)
    record = manager.add_plugin(plugin, "every-hook")
    assert record.status == "ok", record.failure
    group = click.Group("hermes")
    assert manager.extend_cli(group) == [] and "extra" in group.commands
    assert sorted(plugin.called) == sorted((hook, "every-hook") for hook in implemented)
    assert record.registered == {"commands": ["plain", "shout"], "tools": ["echo"]}
