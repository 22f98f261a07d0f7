"""Hermes' `tools.registry`: the `ToolRegistry` class, the `registry` every plugin shares,
`ToolEntry`, `tool_error`, `tool_result`.

`ToolRegistry()` is Hermes' registry as Hermes' own tests and some plugins use it on its own: a
`_tools` dict of name to `ToolEntry`, `register` / `deregister`, the readers, `get_definitions`
(tools whose `check_fn` is false or raises left out, each distinct check run once per call) and
`dispatch` (a handler that raises, or returns anything but a string or Hermes' multimodal
envelope, becomes a JSON error result).

`registry`, the instance plugins import, is hermes-core's own tool registry seen through
Hermes' interface (`served_registry.ServedRegistry`): its `_tools` is a live, read-only view of the
tools the agent offers, and `register(...)` called while a plugin loads is that plugin's
`ctx.register_tool(...)` — so a plugin that wraps a tool (reads `registry._tools[name]`,
registers the same name with `override=True` and a handler that calls the old one) replaces
the tool the agent calls, with hermes-core's validation, hooks and time limit still around it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["ToolEntry", "ToolRegistry", "tool_error", "tool_result"]

log = logging.getLogger("hermes_core.hermes_names")
_MAX_ERROR_CHARS = 2048
_TRUNCATED = "… [truncated]"


def _bounded(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + _TRUNCATED


def tool_error(message: Any, **extra: Any) -> str:
    """`{"error": message, **extra}` as a JSON string; the message is cut at 2,048 characters."""
    return json.dumps({"error": _bounded(str(message)), **extra}, ensure_ascii=False)


def tool_result(data: Any = None, **kwargs: Any) -> str:
    """`data` (or, when it is None, the keyword arguments) as a JSON string."""
    return json.dumps(data if data is not None else kwargs, ensure_ascii=False)


@dataclasses.dataclass(eq=False)
class ToolEntry:
    """A registered tool as Hermes describes it."""

    name: str
    toolset: str
    schema: dict[str, Any]
    handler: Callable[..., Any]
    check_fn: Callable[[], Any] | None
    requires_env: list[str]
    is_async: bool
    description: str
    emoji: str
    max_result_size_chars: int | float | None = None
    dynamic_schema_overrides: Callable[[], Any] | None = None


def _check(check_fn: Callable[[], Any], memo: dict[Any, bool]) -> bool:
    """`bool(check_fn())`, False when it raises; once per distinct check in `memo`."""
    if check_fn not in memo:
        try:
            memo[check_fn] = bool(check_fn())
        except Exception:  # noqa: BLE001 (an availability check that raises means: not available)
            log.warning("check_fn %s raised; its tools are unavailable", getattr(check_fn, "__qualname__", check_fn),
                        exc_info=True)
            memo[check_fn] = False
    return memo[check_fn]


def _grouped(entries: Iterable[ToolEntry]) -> dict[str, list[ToolEntry]]:
    groups: dict[str, list[ToolEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.toolset, []).append(entry)
    return groups


def _env(entries: list[ToolEntry]) -> list[str]:
    out: list[str] = []
    for entry in entries:
        out.extend(v for v in entry.requires_env or [] if v not in out)
    return out


def _normalised(name: str, result: Any) -> Any:
    """A handler's result as Hermes passes it on: a string, or the multimodal envelope."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict) and result.get("_multimodal") is True and isinstance(result.get("content"), list):
        return result
    kind = type(result).__name__
    return tool_error(f"Tool handler returned unsupported result type: {kind}", error_type="tool_result_contract",
                      tool=name, result_type=kind)


def _run(awaitable: Any) -> Any:
    """Run a coroutine from synchronous code, in a thread of its own when a loop runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaitable)
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(asyncio.run(awaitable)), name="hermes-tool-async")
    thread.start()
    thread.join()
    return box[0]


class ToolRegistry:
    """Hermes' tool registry, on its own: what `ToolRegistry()` gives a test or a plugin."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolEntry] = {}
        self._lock = threading.RLock()

    # -- registration -----------------------------------------------------------------

    def register(
        self,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], Any] | None = None,
        requires_env: list[str] | None = None,
        is_async: bool = False,
        description: str = "",
        emoji: str = "",
        max_result_size_chars: int | float | None = None,
        dynamic_schema_overrides: Callable[[], Any] | None = None,
        override: bool = False,
        scope: str | None = None,
    ) -> None:
        """Register a tool. Another toolset's tool of that name is replaced only with `override=True`."""
        if not isinstance(schema, dict):
            raise ValueError(f"Tool {name!r}: schema must be a dict, got {type(schema).__name__}")
        parameters = schema.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise ValueError(f"Tool {name!r}: schema['parameters'] must be an object (JSON Schema dict), "
                             f"got {type(parameters).__name__}")
        with self._lock:
            existing = self._tools.get(name)
            if existing is not None and existing.toolset != toolset and not override:
                log.error("tool %r (toolset %r) would shadow the one of toolset %r; pass override=True to replace it",
                          name, toolset, existing.toolset)
                return
            self._tools[name] = ToolEntry(name, toolset, schema, handler, check_fn, list(requires_env or []), is_async,
                                          description or str(schema.get("description", "")), emoji,
                                          max_result_size_chars, dynamic_schema_overrides)

    def deregister(self, name: str, *, scope: str | None = None) -> None:
        """Remove tool `name` (nothing happens when there is none)."""
        with self._lock:
            self._tools.pop(name, None)

    # -- reading ----------------------------------------------------------------------

    def _snapshot_state(self, scope: str | None = None) -> tuple[list[ToolEntry], dict[str, Callable[[], Any]]]:
        """The entries and each toolset's check, read together."""
        with self._lock:
            entries = list(self._tools.values())
        return entries, {e.toolset: e.check_fn for e in entries if e.check_fn is not None}

    def _snapshot_entries(self) -> list[ToolEntry]:
        return self._snapshot_state()[0]

    def get_entry(self, name: str, *, scope: str | None = None) -> ToolEntry | None:
        return {e.name: e for e in self._snapshot_entries()}.get(name)

    def get_all_entries(self) -> list[ToolEntry]:
        return self._snapshot_entries()

    def get_all_tool_names(self) -> list[str]:
        return sorted(e.name for e in self._snapshot_entries())

    def get_schema(self, name: str) -> dict[str, Any] | None:
        """The tool's schema as registered, whether it is available or not."""
        entry = self.get_entry(name)
        return entry.schema if entry is not None else None

    def get_toolset_for_tool(self, name: str) -> str | None:
        entry = self.get_entry(name)
        return entry.toolset if entry is not None else None

    def get_emoji(self, name: str, default: str = "⚡") -> str:
        entry = self.get_entry(name)
        return (entry.emoji if entry is not None else "") or default

    def get_max_result_size(self, name: str, default: int | float | None = None) -> int | float | None:
        entry = self.get_entry(name)
        size = entry.max_result_size_chars if entry is not None else None
        return size if size is not None else default

    def get_tool_to_toolset_map(self) -> dict[str, str]:
        return {e.name: e.toolset for e in self._snapshot_entries()}

    def get_registered_toolset_names(self) -> list[str]:
        return sorted(_grouped(self._snapshot_entries()))

    def get_tool_names_for_toolset(self, toolset: str) -> list[str]:
        toolset = self._aliases().get(toolset, toolset)
        return sorted(e.name for e in _grouped(self._snapshot_entries()).get(toolset, []))

    def _aliases(self) -> dict[str, str]:
        aliases: dict[str, str] = self.__dict__.setdefault("_toolset_aliases", {})
        return aliases

    def register_toolset_alias(self, alias: str, toolset: str) -> None:
        """`alias` is another name of `toolset` (`get_tool_names_for_toolset(alias)`)."""
        self._aliases()[alias] = toolset

    def get_registered_toolset_aliases(self) -> dict[str, str]:
        return dict(self._aliases())

    # -- availability -----------------------------------------------------------------

    def _exposable(self, toolset: str, entries: list[ToolEntry], memo: dict[Any, bool] | None = None) -> bool:
        """Whether one tool of `toolset` would be offered (no check, or its check passes)."""
        memo = {} if memo is None else memo
        return any(not e.check_fn or _check(e.check_fn, memo) for e in entries if e.toolset == toolset)

    def is_toolset_available(self, toolset: str) -> bool:
        """Whether a tool of `toolset` can run now (never raises)."""
        return self._exposable(toolset, self._snapshot_entries())

    def check_toolset_requirements(self) -> dict[str, bool]:
        entries, memo = self._snapshot_entries(), dict[Any, bool]()
        return {toolset: self._exposable(toolset, entries, memo) for toolset in sorted(_grouped(entries))}

    def get_available_toolsets(self) -> dict[str, dict[str, Any]]:
        """Each toolset: whether it is available, its tools, its required variables."""
        entries, memo = self._snapshot_entries(), dict[Any, bool]()
        return {toolset: {"available": self._exposable(toolset, entries, memo), "tools": [e.name for e in members],
                          "description": "", "requirements": _env(members)}
                for toolset, members in _grouped(entries).items()}

    def check_tool_availability(self, quiet: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
        """The available toolsets, and the unavailable ones with their variables and tools."""
        entries, memo = self._snapshot_entries(), dict[Any, bool]()
        available: list[str] = []
        unavailable: list[dict[str, Any]] = []
        for toolset, members in sorted(_grouped(entries).items()):
            if self._exposable(toolset, entries, memo):
                available.append(toolset)
            else:
                unavailable.append({"name": toolset, "env_vars": members[0].requires_env,
                                    "tools": [e.name for e in members]})
        return available, unavailable

    def get_definitions(self, tool_names: Iterable[str], quiet: bool = False) -> list[dict[str, Any]]:
        """The OpenAI `tools` entries of the named tools that are available now, by name."""
        memo: dict[Any, bool] = {}
        entries = {e.name: e for e in self._snapshot_entries()}
        result = []
        for name in sorted(set(tool_names)):
            entry = entries.get(name)
            if entry is None or (entry.check_fn and not _check(entry.check_fn, memo)):
                continue
            schema = {**entry.schema, "name": entry.name}
            if entry.dynamic_schema_overrides is not None:
                try:
                    overrides = entry.dynamic_schema_overrides()
                except Exception:  # noqa: BLE001 (the static schema stands)
                    log.warning("dynamic_schema_overrides of tool %r raised; its static schema is used", name)
                    overrides = None
                if isinstance(overrides, dict):
                    schema.update(overrides)
            result.append({"type": "function", "function": schema})
        return result

    # -- calling ----------------------------------------------------------------------

    def dispatch(self, name: str, args: Any, *, scope: str | None = None, **kwargs: Any) -> Any:
        """Run tool `name`: its result string (or multimodal envelope); `{"error": ...}` when the
        tool is unknown, its handler raises or returns something else."""
        entry = self.get_entry(name)
        if entry is None:
            return tool_error(f"Unknown tool: {name}")
        try:
            result = entry.handler(args, **kwargs)
            if entry.is_async or asyncio.iscoroutine(result):
                result = _run(result)
            return _normalised(name, result)
        except Exception as exc:  # noqa: BLE001 (a failing tool is an error result, as in Hermes)
            log.warning("tool %r raised %s: %s", name, type(exc).__name__, exc)
            return tool_error(f"Tool execution failed: {type(exc).__name__}: {exc}")
