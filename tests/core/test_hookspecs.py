"""Meta-tests: every hook spec is documented with an example and fired by a test: each hook is
named by the `fires` marker of some test, and that marker is checked while the test runs
(tests/conftest.py, tests/helpers/fires.py): a lifecycle hook's call ran to a callback, a
registration or CLI hook's implementation was called."""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from hermes_core import Command, HookRunner, LifecycleHooks, PluginManager, Tool, hookimpl, hookspecs
from tests.helpers.fires import FiredHooks

SPECS = {
    name: fn for name, fn in vars(hookspecs).items()
    if inspect.isfunction(fn) and hasattr(fn, f"{hookspecs.PROJECT_NAME}_spec")
}
EVERY_HOOK = (*hookspecs.REGISTRATION_HOOKS, *hookspecs.LIFECYCLE_HOOKS, *hookspecs.CLI_HOOKS)
TESTS = Path(__file__).resolve().parents[1]


def test_the_hook_lists_match_the_specs() -> None:
    assert sorted(EVERY_HOOK) == sorted(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_hook_spec_has_a_docstring_with_an_example(name: str) -> None:
    doc = inspect.getdoc(SPECS[name]) or ""
    assert doc.splitlines()[0].strip(), f"{name} has no one-line summary"
    assert "Example::" in doc, f"{name} has no example"


def marks(owner: Any) -> list[Any]:
    found = getattr(owner, "pytestmark", [])
    return found if isinstance(found, list) else [found]


def marked_tests(module: Any) -> Iterator[tuple[str, list[Any]]]:
    """A test module's test functions and test methods, by name, each with its marks and those of
    its class and module (as pytest collects them)."""
    for name, value in vars(module).items():
        if name.startswith("test_") and inspect.isfunction(value):
            yield name, marks(value) + marks(module)
        elif name.startswith("Test") and inspect.isclass(value):
            yield from ((f"{name}.{n}", marks(v) + marks(value) + marks(module)) for n, v in vars(value).items()
                        if n.startswith("test_") and inspect.isfunction(v))


def fired_by_tests() -> dict[str, list[str]]:
    """Each hook and the tests whose `fires` marker names it, from the marks of every test module's
    tests."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("test_*.py")):
        module = importlib.import_module(".".join(("tests", *path.relative_to(TESTS).with_suffix("").parts)))
        for name, test_marks in marked_tests(module):
            for mark in test_marks:
                if mark.name == "fires":
                    for hook in mark.args:
                        found[hook].append(f"{path.relative_to(TESTS)}::{name}")
    return found


def test_every_hook_is_fired_by_a_test() -> None:
    fired = fired_by_tests()
    assert "pre_tool_call" in fired and "register_tool" in fired  # the markers are read
    assert [hook for hook in EVERY_HOOK if hook not in fired] == []
    assert sorted(set(fired) - set(EVERY_HOOK)) == []  # a marker names only real hooks


def test_the_fires_check_counts_a_lifecycle_hook_only_when_its_call_runs_to_a_callback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fired = FiredHooks()
    fired.observe(monkeypatch)
    runner = HookRunner(lambda: 0)
    hooks = LifecycleHooks(runner)
    heard: list[str] = []
    runner.add("on_session_start", lambda session_id: heard.append(session_id), "p")
    built = hooks.on_session_start(session_id="s1", model="m", platform="cli")
    hooks.on_session_end(session_id="s1", task_id="t", turn_id="1", completed=True, failed=False, interrupted=False,
                         turn_exit_reason="done", model="m", platform="cli").run()
    assert fired.missing(["on_session_start", "on_session_end"]) == ["on_session_end", "on_session_start"]
    built.run()  # built, then run: now it reaches its callback
    assert heard == ["s1"] and fired.missing(["on_session_start", "on_session_end"]) == ["on_session_end"]
    runner.add("on_session_end", lambda **kwargs: None, "p")
    asyncio.run(hooks.on_session_end(session_id="s1", task_id="t", turn_id="1", completed=True, failed=False,
                                     interrupted=False, turn_exit_reason="done", model="m", platform="cli").arun())
    assert fired.missing(["on_session_start", "on_session_end"]) == []


def test_the_fires_check_takes_a_registration_hook_from_the_plugin_and_a_lifecycle_hook_only_from_the_runner() -> None:
    fired = FiredHooks()
    fired.note("register_tool")
    assert fired.missing(["register_tool", "register_command"]) == ["register_command"]
    with pytest.raises(ValueError, match="'pre_tool_call' is no registration or CLI hook"):
        fired.note("pre_tool_call")


@pytest.mark.fires("on_session_start")
def test_a_test_marked_fires_runs_with_its_hook_calls_observed(fired_hooks: FiredHooks) -> None:
    runner = HookRunner(lambda: 0)
    runner.add("on_session_start", lambda **kwargs: None, "p")
    assert fired_hooks.missing(["on_session_start"]) == ["on_session_start"]
    LifecycleHooks(runner).on_session_start(session_id="s1", model="m", platform="cli").run()
    assert fired_hooks.missing(["on_session_start"]) == []  # seen by the check conftest installed for the marker


class EveryRegistrationHook:
    """A plugin implementing every registration hook and the CLI hook, each noting its call."""

    def __init__(self, note: Callable[[str], None]) -> None:
        self.called: list[tuple[str, str]] = []
        self.note = note

    def heard(self, hook: str, ctx: Any) -> None:
        self.called.append((hook, ctx.plugin_id))
        self.note(hook)

    def register(self, ctx: Any) -> None:
        self.heard("register", ctx)
        ctx.register_command("plain", lambda raw: "plain")

    @hookimpl
    def register_tool(self, ctx: Any) -> Tool:
        self.heard("register_tool", ctx)
        return Tool("echo", "t", {"name": "echo"}, lambda args, **kw: "{}")

    @hookimpl
    def register_command(self, ctx: Any) -> Command:
        self.heard("register_command", ctx)
        return Command("shout", lambda raw: raw.upper())

    @hookimpl
    def register_context_engine(self, ctx: Any) -> None:
        self.heard("register_context_engine", ctx)

    @hookimpl
    def register_memory_provider(self, ctx: Any) -> None:
        self.heard("register_memory_provider", ctx)

    @hookimpl
    def register_cli_commands(self, cli: click.Group, ctx: Any) -> None:
        self.heard("register_cli_commands", ctx)
        cli.add_command(click.Command("extra"))


@pytest.mark.fires(*hookspecs.REGISTRATION_HOOKS, *hookspecs.CLI_HOOKS)
def test_every_registration_and_cli_hook_is_called_with_the_plugins_own_ctx(fired_hooks: FiredHooks) -> None:
    plugin = EveryRegistrationHook(fired_hooks.note)
    implemented = {name for name in vars(EveryRegistrationHook) if name.startswith("register")}
    assert implemented == {*hookspecs.REGISTRATION_HOOKS, *hookspecs.CLI_HOOKS}
    manager = PluginManager(discover_plugins=False)
    record = manager.add_plugin(plugin, "every-hook")
    assert record.status == "ok", record.failure
    group = click.Group("hermes")
    assert manager.extend_cli(group) == [] and "extra" in group.commands
    assert sorted(plugin.called) == sorted((hook, "every-hook") for hook in implemented)
    assert record.registered == {"commands": ["plain", "shout"], "tools": ["echo"]}


# Hermes' keyword arguments per hook (../shared/hermes/HOOK-ARGS.md), the contract the specs keep.
HERMES = {
    "pre_llm_call": "session_id task_id turn_id user_message conversation_history is_first_turn model platform "
                    "parent_session_id sender_id",
    "post_llm_call": "session_id task_id turn_id user_message assistant_response conversation_history model platform",
    "transform_llm_output": "response_text session_id model platform turn_id",
    "pre_tool_call": "tool_name args task_id session_id tool_call_id turn_id api_request_id middleware_trace",
    "post_tool_call": "tool_name args result task_id session_id tool_call_id turn_id api_request_id duration_ms "
                      "status error_type error_message middleware_trace",
    "transform_tool_result": "tool_name args result task_id session_id tool_call_id turn_id api_request_id "
                             "duration_ms status error_type error_message",
    "on_session_start": "session_id model platform",
    "on_session_end": "session_id task_id turn_id completed failed interrupted turn_exit_reason model platform",
    "on_session_finalize": "session_id platform reason old_session_id new_session_id",
    "on_session_reset": "session_id platform reason old_session_id new_session_id",
    "pre_api_request": "task_id turn_id api_request_id session_id user_message conversation_history platform model "
                       "provider base_url api_mode api_call_count request_messages message_count tool_count "
                       "approx_input_tokens request_char_count max_tokens started_at middleware_trace request",
    "post_api_request": "task_id turn_id api_request_id session_id platform model provider base_url api_mode "
                        "api_call_count api_duration started_at ended_at finish_reason message_count response_model "
                        "response usage assistant_message assistant_content_chars assistant_tool_call_count",
    "api_request_error": "task_id turn_id api_request_id session_id platform model provider base_url api_mode "
                         "api_call_count api_duration started_at ended_at first_chunk_at first_delta_at status_code "
                         "retry_count max_retries retryable reason error request",
    "pre_command": "surface command alias_used args_raw session_key platform",
    "agent_loop_stopped": "session_key platform reason invalidation_reason",
    "on_interim_message": "turn_id iteration session_id model provider surface text already_streamed",
    "transform_terminal_output": "command output returncode task_id env_type tool_call_id",
    "gateway_platform_event": "platform event_type payload",
}
# Hermes' VALID_HOOKS (mid and late sets) and the hooks its docs add (REFERENCE.md §3.6).
REFERENCE = set("""
    pre_tool_call post_tool_call transform_terminal_output transform_tool_result transform_llm_output pre_llm_call
    post_llm_call pre_api_request post_api_request api_request_error on_session_start on_session_end
    on_session_finalize on_session_reset subagent_start subagent_stop pre_gateway_dispatch pre_approval_request
    post_approval_response pre_response_delivery on_stream_start on_stream_delta on_stream_end on_interim_message
    pre_verify transform_api_error_classification on_skill_lifecycle agent_loop_stopped on_room_member_activity
    pre_transcription kanban_task_claimed kanban_task_completed kanban_task_blocked on_kanban_worker_spawned
    on_kanban_worker_exited on_kanban_worker_stale_claim on_kanban_task_updated on_kanban_dispatch_tick
    gateway_platform_event pre_command pre_auxiliary_call post_auxiliary_call pre_tts_synthesis
""".split())


def test_every_hermes_hook_name_is_a_lifecycle_hook_and_no_other_but_hermes_cores_own() -> None:
    assert set(hookspecs.LIFECYCLE_HOOKS) - set(hookspecs.HERMES_CORE_HOOKS) == REFERENCE and len(REFERENCE) == 43
    assert set(hookspecs.HERMES_CORE_HOOKS) <= set(hookspecs.LIFECYCLE_HOOKS) - REFERENCE


@pytest.mark.parametrize("name", sorted(HERMES))
def test_a_hook_takes_hermes_keyword_arguments_and_the_telemetry_version(name: str) -> None:
    expected = HERMES[name].split() + ([] if name == "gateway_platform_event" else ["telemetry_schema_version"])
    assert list(inspect.signature(SPECS[name]).parameters) == expected
    assert hookspecs.hook_arguments(name) == tuple(expected)


@pytest.mark.parametrize("name", hookspecs.LIFECYCLE_HOOKS)
def test_every_lifecycle_hook_has_a_typed_call_with_the_specs_arguments(name: str) -> None:
    from hermes_core import LifecycleHooks

    method = getattr(LifecycleHooks, name, None)
    assert method is not None, f"LifecycleHooks has no method for the {name} hook"
    spec_args = [a for a in inspect.signature(SPECS[name]).parameters if a != "telemetry_schema_version"]
    typed = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
    assert sorted(p.name for p in typed) == sorted(spec_args)  # the runner adds telemetry_schema_version
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in typed)


def test_the_typed_calls_reach_the_callbacks_with_their_arguments_and_the_telemetry_version() -> None:
    from hermes_core import HookRunner, LifecycleHooks

    runner = HookRunner(lambda: 0)
    seen = []
    for name in hookspecs.LIFECYCLE_HOOKS:
        runner.add(name, lambda name=name, **kwargs: seen.append((name, kwargs)), "p")
    hooks = LifecycleHooks(runner)
    for name in hookspecs.LIFECYCLE_HOOKS:
        method = getattr(hooks, name)
        arguments = {arg: {} if arg in ("args", "payload") else "x" for arg in inspect.signature(method).parameters}
        method(**arguments).run()
    assert [name for name, _ in seen] == list(hookspecs.LIFECYCLE_HOOKS)
    for name, kwargs in seen:
        assert sorted(kwargs) == sorted(inspect.signature(SPECS[name]).parameters)
        assert kwargs.get("telemetry_schema_version") == (None if name == "gateway_platform_event"
                                                          else "hermes.observer.v1")
