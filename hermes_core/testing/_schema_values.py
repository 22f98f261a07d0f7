"""Values valid against a tool's JSON Schema `parameters`: what a host that validates can send.

hypothesis-jsonschema would be the library for this, but its latest release (0.23.1) does not
run on current hypothesis (it drives an internal API that hypothesis has changed), so the kit
generates from the part of JSON Schema that tool parameters use: types, `properties`,
`required`, `additionalProperties`, `items`, `enum`, `const`, `anyOf`/`oneOf`, and the length,
size and range bounds. A schema beyond that is a `SchemaNotSupported` naming the keyword and
where it is. Every value is then checked with the validator the host uses (jsonschema, formats
not enforced), so what the contracts send is exactly what a host can send.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

__all__ = ["SchemaNotSupported", "valid_values"]

ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema", "$id", "$comment", "format",
                         "deprecated", "readOnly", "writeOnly", "nullable"})
GENERATED = frozenset({
    "type", "enum", "const", "anyOf", "oneOf", "properties", "required", "additionalProperties", "minProperties",
    "maxProperties", "items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
})
MAX_TEXT = 40  # long enough for unicode edge cases, short enough to keep a contract run fast
MAX_ITEMS = 4
_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


class SchemaNotSupported(Exception):
    """A tool's parameters use JSON Schema the kit cannot generate values for."""


def _any_json() -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                       st.text(max_size=MAX_TEXT))
    return st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=10), inner, max_size=3)),
                        max_leaves=6)


def valid_values(schema: Any, where: str = "parameters") -> st.SearchStrategy[Any]:
    """Values valid against `schema` (checked with jsonschema, as the host checks them)."""
    from jsonschema.validators import validator_for

    validator = validator_for(schema)(schema)
    return _values(schema, where).filter(validator.is_valid)


def _values(schema: Any, where: str) -> st.SearchStrategy[Any]:
    if schema is True or schema == {}:
        return _any_json()
    if schema is False:
        return st.nothing()
    if not isinstance(schema, Mapping):
        raise SchemaNotSupported(f"{where} is not a schema object: {schema!r:.80}")
    unknown = sorted(set(schema) - GENERATED - ANNOTATIONS)
    if unknown:
        raise SchemaNotSupported(f"`{unknown[0]}` at {where}")
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            rest = {k: v for k, v in schema.items() if k != combinator}
            return st.one_of([_values({**rest, **branch} if isinstance(branch, Mapping) else branch,
                                      f"{where}/{combinator}/{i}") for i, branch in enumerate(schema[combinator])])
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or _implied(schema))
    return st.one_of([_typed(t, schema, where) for t in types])


def _implied(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The types a schema without `type` constrains by its keywords (all types when none)."""
    if {"properties", "required", "additionalProperties", "minProperties", "maxProperties"} & set(schema):
        return ("object",)
    if {"items", "minItems", "maxItems", "uniqueItems"} & set(schema):
        return ("array",)
    if {"minLength", "maxLength", "pattern"} & set(schema):
        return ("string",)
    if {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} & set(schema):
        return ("number",)
    return _TYPES


def _typed(kind: str, schema: Mapping[str, Any], where: str) -> st.SearchStrategy[Any]:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind in ("integer", "number"):
        return _numbers(kind, schema)
    if kind == "string":
        return _strings(schema, where)
    if kind == "array":
        items = schema.get("items", True)
        if isinstance(items, list):
            raise SchemaNotSupported(f"`items` as a list (tuple validation) at {where}")
        low = int(schema.get("minItems", 0))
        high = max(low, min(int(schema.get("maxItems", MAX_ITEMS)), low + MAX_ITEMS))
        return st.lists(_values(items, f"{where}/items"), min_size=low, max_size=high,
                        unique_by=(lambda v: repr(v)) if schema.get("uniqueItems") else None)
    if kind == "object":
        return _objects(schema, where)
    raise SchemaNotSupported(f"type {kind!r} at {where}")


def _numbers(kind: str, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(above, bool) or isinstance(below, bool):  # draft 4: flags beside minimum/maximum
        above, below = (low if above else None), (high if below else None)
        low, high = (None if above is not None else low), (None if below is not None else high)
    if kind == "integer":
        first = max([math.ceil(v) for v in (low,) if v is not None] + [math.floor(v) + 1 for v in (above,)
                                                                         if v is not None], default=None)
        last = min([math.floor(v) for v in (high,) if v is not None] + [math.ceil(v) - 1 for v in (below,)
                                                                         if v is not None], default=None)
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            return st.integers(None if first is None else math.ceil(first / step),
                               None if last is None else math.floor(last / step)).map(lambda k: k * step)
        return st.integers(first, last)
    return st.floats(low if low is not None else above, high if high is not None else below,
                     exclude_min=low is None and above is not None, exclude_max=high is None and below is not None,
                     allow_nan=False, allow_infinity=False)


def _strings(schema: Mapping[str, Any], where: str) -> st.SearchStrategy[str]:
    low = int(schema.get("minLength", 0))
    high = max(low, min(int(schema.get("maxLength", MAX_TEXT)), low + MAX_TEXT))
    pattern = schema.get("pattern")
    if pattern is None:
        return st.text(min_size=low, max_size=high)
    try:
        return st.from_regex(pattern).filter(lambda s: low <= len(s) <= high)
    except Exception as exc:  # noqa: BLE001 - a pattern Python's re cannot read
        raise SchemaNotSupported(f"`pattern` {pattern!r} at {where} ({exc})") from None


def _objects(schema: Mapping[str, Any], where: str) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    extra_schema = schema.get("additionalProperties", True)
    strategies = {name: _values(sub, f"{where}/properties/{name}") for name, sub in properties.items()}
    for name in required:
        if name not in strategies:  # required but not described: whatever the extra keys may be
            strategies[name] = _values(extra_schema, f"{where}/additionalProperties")
    optional = st.fixed_dictionaries({}, optional={n: s for n, s in strategies.items() if n not in required})
    extra: st.SearchStrategy[dict[str, Any]] = st.just({})
    if extra_schema is not False:
        names = st.text(min_size=1, max_size=10).filter(lambda n: n not in strategies)
        extra = st.dictionaries(names, _values(extra_schema, f"{where}/additionalProperties"), max_size=2)
    return st.builds(lambda fixed, more, maybe: {**more, **maybe, **fixed},
                     st.fixed_dictionaries({n: strategies[n] for n in required}), extra, optional)
