"""What the contract suites share: the hypothesis import with a clear error, settings, the
tool-schema and JSON-reply checks, and a guard that fails any network call made where none
is allowed."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:
    import hypothesis  # noqa: F401
except ImportError as exc:  # pragma: no cover - the `testing` extra installs it
    raise ImportError(
        "hermes_core.testing's contract suites and strategies need hypothesis: "
        "pip install 'hermes-core[testing]'"
    ) from exc

from hypothesis import HealthCheck, settings

__all__ = ["NetworkCallError", "contract_settings", "no_network"]

# Per-example temporary folders come from a function-scoped fixture (`tmp_path`) on purpose.
# One bug per check, shrunk to its smallest example, is what a plugin author needs to see.
contract_settings = settings(
    deadline=None,
    report_multiple_bugs=False,
    # Every subclass runs the same test functions with its own `self` (provider): by design.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.differing_executors],
)

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
