"""Tool arguments checked by a compiled validator, with jsonschema's words when they are wrong.

A tool's `parameters` are compiled once (fastjsonschema generates a Python function for the
schema, ~1 µs a call against ~15 µs for jsonschema); arguments it accepts go straight to the
handler. Only when it rejects them does jsonschema validate again, to word the error exactly
as before. The compiled check may be stricter than jsonschema (then jsonschema decides), never
looser: it is used only for schemas made of keywords that mean the same in draft 7
(fastjsonschema) and 2020-12 (what jsonschema applies to a schema without `$schema`), and
that cannot turn a stricter part into a looser whole (`not`, `oneOf`); any other schema is
checked by jsonschema alone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["ToolValidator"]

_ANNOTATIONS = {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
                "format"}  # format: compiled with use_formats=False, an annotation as in jsonschema's default
_VALUES = {"type", "required", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
           "minLength", "maxLength", "pattern", "minItems", "maxItems", "minProperties", "maxProperties"}
# Not `not` nor `oneOf`: the compiled check may be stricter than jsonschema inside them (Python's `$`
# matches before a final newline for jsonschema, not for the compiled `pattern`), and under them a
# stricter part makes the whole looser. A schema using them is checked by jsonschema alone.
_ONE = {"additionalProperties", "items"}  # a subschema
_MAP = {"properties", "patternProperties"}  # name -> subschema
_LIST = {"anyOf", "allOf"}  # subschemas
_CACHE_SIZE = 512
_compiled: dict[str, Callable[[Any], Any] | None] = {}
_lock = threading.Lock()


def _portable(schema: Any) -> bool:
    """Whether every keyword of `schema` means the same in draft 7 and 2020-12."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in _VALUES:
            continue
        if key in _ONE:
            if not _portable(value):
                return False
        elif key in _MAP:
            if not isinstance(value, Mapping) or not all(_portable(v) for v in value.values()):
                return False
        elif key in _LIST:
            if not isinstance(value, list) or not all(_portable(v) for v in value):
                return False
        else:
            return False
    return True


def _compile(schema: Mapping[str, Any]) -> Callable[[Any], Any] | None:
    """The compiled check of `schema`, shared by equal schemas; None when there is none."""
    if not _portable(schema):
        return None
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return None
    with _lock:
        if key in _compiled:
            return _compiled[key]
    try:
        import fastjsonschema

        check: Callable[[Any], Any] | None = fastjsonschema.compile(
            json.loads(key), use_default=False, use_formats=False)
    except Exception:  # a schema it cannot compile (jsonschema accepted it): jsonschema alone
        check = None
    with _lock:
        if len(_compiled) >= _CACHE_SIZE:
            _compiled.clear()
        _compiled[key] = check
    return check


_UNSET: Any = object()


class ToolValidator:
    """A tool's `parameters` validator with jsonschema's `iter_errors`, compiled on first use.

    >>> list(ToolValidator({"type": "object", "required": ["a"]}).iter_errors({"a": 1}))
    []
    """

    __slots__ = ("_check", "_full", "parameters")

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self.parameters = parameters
        self._check: Callable[[Any], Any] | None = _UNSET
        self._full: Any = None

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        """No errors when the compiled check accepts `instance`; else jsonschema's errors."""
        check = self._check
        if check is _UNSET:
            check = self._check = _compile(self.parameters)
        if check is not None:
            try:
                check(instance)
                return iter(())
            except Exception:  # rejected (or the check failed): jsonschema decides and words it
                pass
        full = self._full
        if full is None:
            from jsonschema.validators import validator_for

            full = self._full = validator_for(self.parameters)(self.parameters)
        errors: Iterator[Any] = full.iter_errors(instance)
        return errors
