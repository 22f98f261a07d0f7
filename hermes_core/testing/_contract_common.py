"""What the contract suites share: the hypothesis import with a clear error, settings, the
tool-schema and JSON-reply checks, and a guard that fails any network call made where none
is allowed."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ._hypothesis import hypothesis  # first: a clear error when hypothesis is missing

# isort: split
import hypothesis.errors
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = ["FAST_PROFILE", "THOROUGH_PROFILE", "NetworkCallError", "ToolCallChecks", "contract_settings",
           "no_network"]

FAST_PROFILE = "hermes-contract"
THOROUGH_PROFILE = "hermes-contract-thorough"
FAST_EXAMPLES = 20
THOROUGH_EXAMPLES = 200


def register_profiles() -> None:
    """The contract suites' hypothesis profiles: `hermes-contract` (the default, a few seconds
    per plugin) and `hermes-contract-thorough` (for CI: `pytest --hypothesis-profile=
    hermes-contract-thorough`)."""
    settings.register_profile(FAST_PROFILE, max_examples=FAST_EXAMPLES)
    settings.register_profile(THOROUGH_PROFILE, max_examples=THOROUGH_EXAMPLES)


def _base() -> settings:
    """The profile the contracts run under: the one loaded, unless that is one of hypothesis'
    own (`default`, or `ci` on a CI machine), which take 100 examples per check: then the fast
    contract profile on top of it (keeping what it sets besides, e.g. `derandomize`)."""
    active = settings.default
    assert active is not None  # hypothesis always has a loaded profile
    for name in ("default", "ci"):
        try:
            builtin = settings.get_profile(name)
        except hypothesis.errors.InvalidArgument:
            continue
        if active is builtin:
            return settings(parent=active, max_examples=settings.get_profile(FAST_PROFILE).max_examples)
    return active


register_profiles()


def contract_settings(test: Callable[..., Any]) -> Callable[..., Any]:
    """The settings of a contract check, taken from the profile loaded when the contract is
    defined (so `--hypothesis-profile` applies): one bug per check, shrunk to its smallest
    example, is what a plugin author needs to see."""
    return settings(
        parent=_base(),
        deadline=None,
        report_multiple_bugs=False,
        # Per-example temporary folders come from a function-scoped fixture (`tmp_path`) on purpose;
        # every subclass runs the same test functions with its own `self` (provider): by design.
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                               HealthCheck.differing_executors],
    )(test)


_NETWORK_EVENTS = frozenset({
    "socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
    "socket.gethostbyaddr", "socket.sendto", "socket.sendmsg",
})
_watch = threading.local()
_installed = False
_install_lock = threading.Lock()


class NetworkCallError(AssertionError):
    """Code that must not touch the network did (the call was stopped)."""


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event in _NETWORK_EVENTS and getattr(_watch, "what", None):
        raise NetworkCallError(f"{_watch.what} made a network call ({event} {args!r:.200}); it must not")


@contextmanager
def no_network(what: str) -> Iterator[None]:
    """Fail (and stop) any socket connect, DNS lookup or send made by this thread inside the block."""
    global _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_audit)  # audit hooks cannot be removed; it is idle outside `no_network`
            _installed = True
    previous = getattr(_watch, "what", None)
    _watch.what = what
    try:
        yield
    finally:
        _watch.what = previous


def json_reply(result: Any, where: str) -> Any:
    """`result` parsed, failing the check when it is not a JSON string."""
    assert isinstance(result, str), f"{where} returned {type(result).__name__}, not a JSON string: {result!r:.200}"
    try:
        return json.loads(result)
    except ValueError:
        raise AssertionError(f"{where} returned a string that is not JSON: {result!r:.200}") from None


def check_tool_schemas(schemas: Any, where: str) -> list[str]:
    """Fail unless `schemas` is a list of OpenAI function objects with unique, valid names and
    valid JSON Schema `parameters` of type object; returns the names."""
    from jsonschema.validators import validator_for

    assert isinstance(schemas, list), f"{where} returned {type(schemas).__name__}, not a list"
    names = [s.get("name") for s in schemas if isinstance(s, dict)]
    assert len(names) == len(schemas), f"every tool schema of {where} must be a dict: {schemas!r:.300}"
    assert len(set(names)) == len(names), f"tool names repeat in {where}: {names}"
    for schema in schemas:
        name = schema["name"]
        assert isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name), (
            f"tool name {name!r} is not a valid OpenAI function name")
        assert isinstance(schema.get("description", ""), str), f"{name}: description must be a string"
        parameters = schema.get("parameters", {"type": "object"})
        assert isinstance(parameters, dict) and parameters.get("type") == "object", (
            f"{name}: parameters must be a JSON Schema of type object")
        validator_for(parameters).check_schema(parameters)
    return [str(name) for name in names]


STRICT = ("strict_tool_arguments = True also sends arguments that do not match the tool's parameters, as a host "
          "that does not validate them (Hermes Agent) may")


class ToolCallChecks:
    """How the contracts call an engine's or a provider's tools.

    By default only with arguments the host can send: objects valid against the tool's
    `parameters` (hermes-core validates before any handler runs), plus a call of an unknown
    tool. Set `strict_tool_arguments = True` in the subclass to also send near-misses, when
    the plugin runs under hosts that do not validate (Hermes Agent does not). Override
    `tool_arguments(self, schema)` to give a strategy for parameters the kit cannot generate.
    """

    strict_tool_arguments = False

    def tool_arguments(self, schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        """The arguments the contract calls tool `schema["name"]` with (see the class docstring)."""
        from .strategies import tool_arguments

        return tool_arguments(schema, strict=self.strict_tool_arguments)

    def _check_tool_calls(self, plugin: Any, data: st.DataObject) -> None:
        from jsonschema.validators import validator_for

        from ._schema_values import SchemaNotSupported

        for schema in [*plugin.get_tool_schemas(), {"name": "no_such_tool"}]:
            name = schema["name"]
            try:
                arguments = self.tool_arguments(schema)
            except SchemaNotSupported as exc:
                raise AssertionError(
                    f"cannot generate arguments for tool {name!r}: its parameters use {exc}, beyond what the contract "
                    f"generates; override tool_arguments(self, schema) in {type(self).__name__} to give a hypothesis "
                    "strategy for them") from None
            parameters = schema.get("parameters") or {"type": "object"}
            valid = validator_for(parameters)(parameters).is_valid
            drawn = data.draw(arguments, label=f"arguments of {name}")
            for args in ([{}, drawn] if self.strict_tool_arguments else [drawn]):  # strict: `{}` every time
                note = "" if valid(args) else f" (these arguments do not match the tool's parameters: {STRICT})"
                self._call_tool(plugin, name, args, note)

    @staticmethod
    def _call_tool(plugin: Any, name: str, args: dict[str, Any], note: str) -> None:
        where = f"handle_tool_call({name!r}, {args!r:.300})"
        try:
            result = plugin.handle_tool_call(name, args)
        except Exception as exc:  # noqa: BLE001 - the failure is the finding
            raise AssertionError(f"{where} raised {type(exc).__name__}: {exc}{note}") from exc
        assert isinstance(result, str), f"{where} returned {type(result).__name__}, not a JSON string: {result!r:.200}{note}"
        try:
            json.loads(result)
        except ValueError:
            raise AssertionError(f"{where} returned a string that is not JSON: {result!r:.200}{note}") from None
