"""The tool registry: schema checks, validated dispatch, isolation, the override gate."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_core import Tool, ToolOverrideError, ToolRegistry, ToolSchemaError

PARAMS = {
    "type": "object",
    "properties": {"count": {"type": "integer", "minimum": 1}, "label": {"type": "string"}},
    "required": ["count"],
    "additionalProperties": False,
}


def make(name="t", handler=None, plugin_id="p", **kwargs):
    handler = handler or (lambda args, **kw: json.dumps(args))
    return Tool(name, kwargs.pop("toolset", "ts"), kwargs.pop("schema", {"name": name, "parameters": PARAMS}),
                handler, plugin_id=plugin_id, **kwargs)


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry()


def result(text: str):
    return json.loads(text)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("not a dict", "schema must be a dict"),
        ({"name": "other"}, "differs from the tool name"),
        ({"parameters": []}, "must be a JSON Schema object"),
        ({"parameters": {"type": "string"}}, "must describe an object"),
        ({"parameters": {"type": "object", "properties": {"x": {"type": "nonsense"}}}}, "not a valid JSON Schema at properties/x/type"),
        ({"parameters": {"type": "object", "required": "count"}}, "not a valid JSON Schema"),
    ],
)
def test_invalid_schema_is_rejected_naming_plugin_and_tool(registry, schema, message) -> None:
    with pytest.raises(ToolSchemaError) as info:
        registry.add(make(schema=schema))
    assert message in str(info.value)
    assert "tool 't' of plugin 'p'" in str(info.value)
    assert registry.get("t") is None


def test_schema_gets_name_and_default_parameters(registry) -> None:
    registry.add(make(schema={"description": "d"}, description="ignored"))
    (info,) = registry.infos()
    assert info.schema == {"description": "d", "name": "t", "parameters": {"type": "object", "properties": {}}}
    assert registry.schemas() == [{"type": "function", "function": info.schema}]


def test_arguments_are_validated_before_the_handler_runs(registry) -> None:
    calls = []
    registry.add(make(handler=lambda args, **kw: calls.append(args) or "ok"))
    assert "field 'count'" in result(registry.dispatch_without_hooks("t", {"count": "two"}))["error"]
    assert "field 'count'" in result(registry.dispatch_without_hooks("t", {"label": "x"}))["error"]
    assert "field 'count'" in result(registry.dispatch_without_hooks("t", {"count": 0}))["error"]
    assert "extra" in result(registry.dispatch_without_hooks("t", {"count": 1, "extra": 1}))["error"]
    assert calls == []
    assert registry.dispatch_without_hooks("t", {"count": 2}) == "ok"
    assert registry.dispatch_without_hooks("t", '{"count": 3}') == "ok"  # the model's JSON string is accepted
    assert "not JSON" in result(registry.dispatch_without_hooks("t", "{oops"))["error"]
    assert "nested too deeply" in result(registry.dispatch_without_hooks("t", "[" * 100_000))["error"]
    assert "expected an object" in result(registry.dispatch_without_hooks("t", [1]))["error"]


@settings(max_examples=150, deadline=None)
@given(args=st.dictionaries(st.sampled_from(["count", "label", "x"]),
                            st.one_of(st.integers(-3, 3), st.text(max_size=3), st.none(), st.booleans())))
def test_the_handler_runs_exactly_when_the_arguments_match_the_schema(args) -> None:
    from jsonschema import Draft202012Validator

    registry = ToolRegistry()
    seen = []
    registry.add(make(handler=lambda a, **kw: seen.append(a) or "ran"))
    out = registry.dispatch_without_hooks("t", args)
    valid = Draft202012Validator(PARAMS).is_valid(args)
    assert (out == "ran") is valid
    assert seen == ([args] if valid else [])


def test_handler_exceptions_become_bounded_error_strings(registry) -> None:
    def explode(args, **kw):
        raise ValueError("x" * 10_000)

    registry.add(make(handler=explode))
    text = result(registry.dispatch_without_hooks("t", {"count": 1}))["error"]
    assert text.startswith("Tool execution failed: ValueError: xxx")
    assert len(text) <= 2048


@pytest.mark.parametrize("exc", [SystemExit(2), RuntimeError("r"), RecursionError("deep"), KeyError("k")])
def test_a_handler_cannot_take_the_host_down(registry, exc) -> None:
    def handler(args, **kw):
        raise exc

    registry.add(make(handler=handler))
    assert result(registry.dispatch_without_hooks("t", {"count": 1}))["error"].startswith(f"Tool execution failed: {type(exc).__name__}")


def test_failures_are_logged_with_traceback_and_plugin(registry, caplog) -> None:
    registry.add(make(handler=lambda a, **k: 1 / 0))
    registry.dispatch_without_hooks("t", {"count": 1})
    (record,) = [r for r in caplog.records if r.name == "hermes_core.tools"]
    assert "plugin 'p'" in record.getMessage() and record.exc_info is not None


def test_unknown_tool(registry) -> None:
    assert result(registry.dispatch_without_hooks("nope", {})) == {"error": "Unknown tool: nope"}
    assert result(asyncio.run(registry.adispatch_without_hooks("nope", {}))) == {"error": "Unknown tool: nope"}


def test_non_string_results_are_serialised(registry) -> None:
    registry.add(make(handler=lambda a, **k: {"n": a["count"]}))
    assert result(registry.dispatch_without_hooks("t", {"count": 4})) == {"n": 4}


def test_check_fn_decides_availability(registry) -> None:
    state = {"ok": False}
    registry.add(make("gated", check_fn=lambda: state["ok"]))
    registry.add(make("raising", check_fn=lambda: 1 / 0))
    infos = {i.name: i for i in registry.infos()}
    assert not infos["gated"].available and not infos["raising"].available
    assert "ZeroDivisionError" in infos["raising"].reason
    assert "not available" in result(registry.dispatch_without_hooks("gated", {"count": 1}))["error"]
    assert registry.schemas() == []
    state["ok"] = True
    assert registry.dispatch_without_hooks("gated", {"count": 1}) == '{"count": 1}'


def test_requires_env_makes_a_tool_unavailable_until_set(registry, monkeypatch) -> None:
    monkeypatch.delenv("HERMES_TEST_KEY", raising=False)
    registry.add(make(requires_env=["HERMES_TEST_KEY"]))
    assert "HERMES_TEST_KEY" in registry.infos()[0].reason
    monkeypatch.setenv("HERMES_TEST_KEY", "v")
    assert registry.infos()[0].available


async def async_handler(args, **kwargs):
    await asyncio.sleep(0)
    return json.dumps({"async": args["count"], "thread": threading.current_thread().name, **kwargs})


def test_async_handler_from_a_sync_caller(registry) -> None:
    registry.add(make(handler=async_handler, is_async=True))
    assert result(registry.dispatch_without_hooks("t", {"count": 5}, task="k"))["async"] == 5


def test_async_handler_from_a_sync_caller_inside_a_running_loop(registry) -> None:
    registry.add(make(handler=async_handler))

    async def host():
        return registry.dispatch_without_hooks("t", {"count": 6})  # a sync call made from async code

    assert result(asyncio.run(host()))["async"] == 6


def test_async_and_sync_handlers_from_an_async_caller(registry) -> None:
    registry.add(make("a", handler=async_handler))
    registry.add(make("s", handler=lambda args, **kw: threading.current_thread().name))

    async def host():
        return await registry.adispatch_without_hooks("a", {"count": 7}), await registry.adispatch_without_hooks("s", {"count": 1})

    from_async, from_sync = asyncio.run(host())
    assert result(from_async)["async"] == 7
    assert from_sync != threading.current_thread().name  # a sync handler never blocks the loop


def test_async_handler_exception_is_wrapped(registry) -> None:
    async def bad(args, **kw):
        raise OSError("disk")

    registry.add(make(handler=bad))
    assert result(registry.dispatch_without_hooks("t", {"count": 1}))["error"] == "Tool execution failed: OSError: disk"
    assert result(asyncio.run(registry.adispatch_without_hooks("t", {"count": 1})))["error"] == "Tool execution failed: OSError: disk"


def test_override_gate() -> None:
    granted = {"trusted"}
    registry = ToolRegistry(lambda plugin_id: plugin_id in granted)
    registry.add(make("web", plugin_id="core"))
    with pytest.raises(ToolOverrideError, match="already registered by plugin 'core'"):
        registry.add(make("web", plugin_id="other", toolset="x"))
    with pytest.raises(PermissionError, match="plugins.entries.other.allow_tool_override: true"):
        registry.add(make("web", plugin_id="other", override=True))
    undo = registry.add(make("web", plugin_id="trusted", override=True))
    assert registry.get("web").plugin_id == "trusted"
    undo()
    assert registry.get("web").plugin_id == "core"


def test_engine_tools_are_attached_validated_and_answered_by_the_engine(registry) -> None:
    class Engine:
        name = "lcm"

        def get_tool_schemas(self):
            return [
                {"name": "lcm_grep", "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                                    "required": ["q"]}},
                {"name": "taken", "parameters": {"type": "object"}},
                {"name": "bad", "parameters": {"type": "array"}},
            ]

        def handle_tool_call(self, name, args, **kwargs):
            return json.dumps({"tool": name, "q": args["q"]})

    problems = registry.attach(Engine(), "context_engine/lcm", "context_engine:lcm", taken=lambda n: n == "taken")
    assert registry.get("lcm_grep").plugin_id == "context_engine/lcm"
    assert registry.get("lcm_grep").toolset == "context_engine:lcm"
    assert result(registry.dispatch_without_hooks("lcm_grep", {"q": "x"})) == {"tool": "lcm_grep", "q": "x"}
    assert "field 'q'" in result(registry.dispatch_without_hooks("lcm_grep", {}))["error"]
    assert registry.get("taken") is None and registry.get("bad") is None
    assert len(problems) == 2 and "'taken' is left out" in problems[0] and "type: object" in problems[1]


def test_an_engine_whose_tool_schemas_raise_offers_no_tools(registry) -> None:
    class Broken:
        def get_tool_schemas(self):
            raise RuntimeError("no schemas today")

    (problem,) = registry.attach(Broken(), "memory/x", "memory:x")
    assert "get_tool_schemas() raised RuntimeError: no schemas today" in problem
    assert len(registry) == 0
