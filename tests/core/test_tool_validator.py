"""Tool arguments are checked by a compiled validator, which never lets through what
jsonschema rejects; when it rejects, the error is jsonschema's own: a tool call reports the
same as with jsonschema alone (a schema with a keyword the compiled check does not know)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from hermes_core import Tool, ToolRegistry

NAMES = st.sampled_from(["a", "b", "path", "n"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False),
                    st.sampled_from([0, 1, 1.0, 0.0, True, False, "", "a", "ab\n", "abc", "x" * 12]))
INSTANCES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(NAMES, inner, max_size=4)), max_leaves=8)
TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])


def leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda t: {"type": t}, st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3, unique=True))),
        st.builds(lambda v: {"enum": v}, st.lists(SCALARS, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, SCALARS),
        st.builds(lambda k, v: {k: v}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
                  st.integers(-3, 3)),
        st.builds(lambda k, v: {k: v}, st.sampled_from(["minLength", "maxLength", "minItems", "maxItems",
                                                        "minProperties", "maxProperties"]), st.integers(0, 3)),
        st.builds(lambda p: {"pattern": p}, st.sampled_from(["^a", "b$", "^ab$", "\\d", "^[a-c]+$"])),
        st.builds(lambda f: {"type": "string", "format": f}, st.sampled_from(["email", "date-time", "uri", "made-up"])),
    )


SCHEMAS = st.recursive(leaf(), lambda inner: st.one_of(
    st.builds(lambda p, r, extra: {"type": "object", "properties": p, "required": r, "additionalProperties": extra},
              st.dictionaries(NAMES, inner, max_size=3), st.lists(NAMES, max_size=2, unique=True),
              st.one_of(st.booleans(), inner)),
    st.builds(lambda i: {"type": "array", "items": i}, inner),
    st.builds(lambda k, s: {k: s}, st.sampled_from(["anyOf", "oneOf", "allOf"]), st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda s: {"not": s}, inner),
    st.builds(lambda p: {"patternProperties": p}, st.dictionaries(st.sampled_from(["^a", "h$"]), inner, max_size=2)),
), max_leaves=6)


def registry(schema: dict[str, Any]) -> ToolRegistry:
    """Tool "fast" with `schema` for its argument x, and tool "slow" with the same schema and a
    keyword jsonschema ignores and the compiled check does not take, so jsonschema alone checks it."""
    tools = ToolRegistry()
    for name, extra in (("fast", {}), ("slow", {"x-unknown-keyword": True})):
        parameters = {"type": "object", "properties": {"x": schema}, **extra}
        tools.add(Tool(name, "test", {"name": name, "parameters": parameters}, lambda args, **kw: "ran"))
    return tools


@settings(max_examples=400, deadline=None)
@given(SCHEMAS, INSTANCES)
@example({"oneOf": [{"type": "array", "items": {"pattern": "b$"}}, {"patternProperties": {}}]}, ["ab\n"])
def test_a_call_reports_what_jsonschema_alone_reports(schema: dict[str, Any], instance: Any) -> None:
    tools = registry(schema)
    slow = tools.dispatch_without_hooks("slow", {"x": instance})
    assert tools.dispatch_without_hooks("fast", {"x": instance}) == slow.replace("'slow'", "'fast'")


def test_a_schema_with_keywords_whose_meaning_changed_since_draft_7_is_checked_by_jsonschema() -> None:
    tools = registry({"type": "array", "prefixItems": [{"type": "integer"}]})  # draft 7 does not know prefixItems
    assert "'no' is not of type 'integer'" in tools.dispatch_without_hooks("fast", {"x": ["no"]})
    assert tools.dispatch_without_hooks("fast", {"x": [1, "more"]}) == "ran"
