"""What Hermes' `ctx` offers a plugin beyond registering tools, hooks and engines.

Each is small and owned by the `Loader`, one instance per host, and everything a plugin adds
comes with the function that takes it away again (so a plugin whose load fails, or that is
unloaded, leaves nothing behind):

- `PluginState`: `ctx.state`, a durable JSON key-value store per plugin;
- `PromptSections`: `ctx.register_system_prompt_section`, bounded text for the system prompt;
- `Skills`: `ctx.register_skill`, read-only skill documents named `<plugin>:<name>`;
- `EventBus`: `ctx.emit` / `ctx.subscribe`, fire-and-forget events between plugins;
- `AuxiliaryTasks`: `ctx.register_auxiliary_task`, a plugin's own `auxiliary.<key>` LLM task;
- `Capabilities`: what only some hosts serve (a messaging gateway, an approval UI, ...);
- `PluginManifest`: `ctx.manifest`, what the plugin was discovered as.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ._runtime.invoke import contained
from ._errors import HermesError, HostCapabilityError, PluginStateError, RegistrationError

__all__ = [
    "AuxiliaryTask", "AuxiliaryTasks", "Capabilities", "EventBus", "HostCapabilityError", "PluginManifest",
    "PluginState", "PluginStateError", "PromptSection", "PromptSections", "Skill", "Skills", "UNSERVED",
]

log = logging.getLogger("hermes_core.plugins")
Undo = Callable[[], None]


# -- ctx.state ---------------------------------------------------------------------------------

STATE_QUOTA_BYTES = 10 * 1024 * 1024


class PluginState:
    """A plugin's durable key-value store: JSON values, kept in
    `$HERMES_HOME/plugin-data/<plugin id>/state.json`, written atomically on every change, at
    most 10 MB. Works like a dict: `state["k"] = v`, `state.get("k", d)`, `del state["k"]`,
    `"k" in state`, `state.keys()`, plus `set`, `delete`, `update`, `clear`."""

    def __init__(self, path: Path, plugin_id: str) -> None:
        self.path = path
        self._plugin_id = plugin_id
        self._lock = threading.RLock()
        self._data: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"<PluginState of {self._plugin_id!r} at {self.path}>"

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            try:
                text = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = "{}"
            except OSError as exc:
                raise PluginStateError(f"cannot read the state of plugin {self._plugin_id!r} ({self.path}): {exc}") from None
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise PluginStateError(
                    f"the state of plugin {self._plugin_id!r} ({self.path}) is not JSON ({exc}); "
                    "fix or remove the file") from None
            self._data = data if isinstance(data, dict) else {}
        return self._data

    def _write(self, data: dict[str, Any]) -> None:
        from ._files import write_atomic

        try:
            text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise PluginStateError(f"ctx.state of plugin {self._plugin_id!r} takes JSON values only: {exc}") from None
        if len(text.encode("utf-8")) > STATE_QUOTA_BYTES:
            raise PluginStateError(
                f"ctx.state of plugin {self._plugin_id!r} would exceed its {STATE_QUOTA_BYTES // 2**20} MB quota; "
                "keep large data in files under the plugin's own folder")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, text)
        except OSError as exc:
            raise PluginStateError(f"cannot write the state of plugin {self._plugin_id!r} ({self.path}): {exc}; "
                                   "the previous state was kept") from None
        self._data = data

    def _change(self, change: Callable[[dict[str, Any]], None]) -> None:
        with self._lock:
            data = dict(self._load())
            change(data)
            self._write(data)

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._load().get(key, default)

    def set(self, key: str, value: Any) -> None:
        self._change(lambda data: data.__setitem__(_state_key(key), value))

    def delete(self, key: str) -> bool:
        """Remove `key`; whether it was there."""
        with self._lock:
            if key not in self._load():
                return False
            self._change(lambda data: data.pop(key, None))
            return True

    def update(self, values: Mapping[str, Any]) -> None:
        self._change(lambda data: data.update({_state_key(k): v for k, v in values.items()}))

    def clear(self) -> None:
        self._change(lambda data: data.clear())

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._load())

    def items(self) -> list[tuple[str, Any]]:
        with self._lock:
            return list(self._load().items())

    def __getitem__(self, key: str) -> Any:
        with self._lock:
            return self._load()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        if not self.delete(key):
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._load()

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())


def _state_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise PluginStateError(f"ctx.state keys are non-empty strings, not {key!r}")
    return key


# -- system prompt sections ------------------------------------------------------------------------

SECTION_MAX_CHARS = 4_000
SECTIONS_TOTAL_CHARS = 8_000
SECTIONS_MAX = 32
SECTION_POSITIONS = ("before_memory", "after_memory", "end")
_SECTION_ID = re.compile(r"[a-z0-9][a-z0-9_.\-]{0,63}")


class PromptSection(NamedTuple):
    plugin_id: str
    id: str
    content: str | Callable[[], Any]
    position: str
    max_chars: int


class PromptSections:
    """Text plugins add to the system prompt, within Hermes' limits: each section at most
    4,000 characters (its `max_chars`), all together at most 8,000 and 32 sections. Callable
    content is rendered when a session starts and kept for that session."""

    def __init__(self) -> None:
        self._sections: dict[tuple[str, str], PromptSection] = {}

    def add(self, section: PromptSection) -> Undo:
        where = f"ctx.register_system_prompt_section({section.id!r})"
        if not isinstance(section.id, str) or not _SECTION_ID.fullmatch(section.id):
            raise RegistrationError(f"{where}: a section id is lowercase letters, digits, '_', '-' or '.', "
                                    "at most 64 characters", plugin_id=section.plugin_id)
        if not (isinstance(section.content, str) or callable(section.content)):
            raise RegistrationError(f"{where}: content is a string or a function returning one",
                                    plugin_id=section.plugin_id)
        if section.position not in SECTION_POSITIONS:
            log.warning("%s of plugin %r: unknown position %r, used as 'after_memory' (positions: %s)",
                        where, section.plugin_id, section.position, ", ".join(SECTION_POSITIONS))
            section = section._replace(position="after_memory")
        key = (section.plugin_id, section.id)
        if key not in self._sections and len(self._sections) >= SECTIONS_MAX:
            raise RegistrationError(f"{where}: the system prompt already has {SECTIONS_MAX} plugin sections",
                                    plugin_id=section.plugin_id)
        previous = self._sections.get(key)
        self._sections[key] = section._replace(max_chars=max(0, min(int(section.max_chars), SECTION_MAX_CHARS)))

        def undo() -> None:
            if previous is None:
                self._sections.pop(key, None)
            else:
                self._sections[key] = previous

        return undo

    def render(self) -> dict[str, list[str]]:
        """Each position's texts, in registration order: rendered now, cut to each section's
        limit, and dropped once the total would pass 8,000 characters (a warning says so)."""
        out: dict[str, list[str]] = {position: [] for position in SECTION_POSITIONS}
        total = 0
        for section in list(self._sections.values()):
            try:
                text = section.content() if callable(section.content) else section.content
            except BaseException as exc:  # noqa: BLE001 - a plugin's section never breaks the prompt
                contained(exc)
                log.warning("system prompt section %r of plugin %r failed: %s: %s", section.id, section.plugin_id,
                            type(exc).__name__, exc)
                continue
            text = "" if text is None else str(text).strip()
            if len(text) > section.max_chars:
                text = text[: max(0, section.max_chars - 1)] + "…"
            if not text:
                continue
            if total + len(text) > SECTIONS_TOTAL_CHARS:
                log.warning("system prompt section %r of plugin %r left out: the plugin sections would pass %d "
                            "characters", section.id, section.plugin_id, SECTIONS_TOTAL_CHARS)
                continue
            total += len(text)
            out[section.position].append(text)
        return out


# -- skills --------------------------------------------------------------------------------------

_SKILL_NAME = re.compile(r"[A-Za-z0-9_\-]+")


class Skill(NamedTuple):
    name: str  # "<plugin>:<name>"
    path: Path
    description: str
    plugin_id: str

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")


class Skills:
    """Read-only skill documents plugins ship, named `<plugin>:<name>`."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}

    def add(self, plugin_id: str, name: str, path: Any, description: str) -> Undo:
        where = f"ctx.register_skill({name!r})"
        if not isinstance(name, str) or not _SKILL_NAME.fullmatch(name):
            raise RegistrationError(f"{where}: a skill name is letters, digits, '_' or '-' (no ':')",
                                    plugin_id=plugin_id)
        if not isinstance(path, Path):
            raise RegistrationError(f"{where}: path must be a pathlib.Path, not {type(path).__name__} "
                                    "(as in Hermes)", plugin_id=plugin_id)
        if not path.is_file():
            raise RegistrationError(f"{where}: {path} is not a file", plugin_id=plugin_id)
        skill = Skill(f"{plugin_id}:{name}", path, description, plugin_id)
        self._skills[skill.name] = skill
        return lambda: self._skills.pop(skill.name, None) and None

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def all(self) -> list[Skill]:
        return sorted(self._skills.values())


# -- the event bus -------------------------------------------------------------------------------

EVENT_DEPTH_MAX = 8
EVENT_PENDING_MAX = 64


class EventBus:
    """Plugins' events: `emit` puts `<plugin id>:<event>` on a queue (at most 64 pending) that
    one worker thread delivers to the subscribers in order; a subscriber that raises is
    logged; an event emitted from inside a delivery more than 8 deep is dropped. The
    `hermes:` namespace is the host's."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[str, Callable[..., Any], str]] = []
        self._queue: queue.Queue[tuple[str, Any, int]] = queue.Queue(EVENT_PENDING_MAX)
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._local = threading.local()

    def subscribe(self, plugin_id: str, event: str, callback: Callable[..., Any]) -> Undo:
        if not isinstance(event, str) or not event:
            raise RegistrationError(f"ctx.subscribe: an event name is a non-empty string, not {event!r}",
                                    plugin_id=plugin_id)
        if not callable(callback):
            raise RegistrationError(f"ctx.subscribe({event!r}): the callback is not callable", plugin_id=plugin_id)
        entry = (event, callback, plugin_id)
        with self._lock:
            self._subscribers.append(entry)

        def undo() -> None:
            with self._lock:
                if entry in self._subscribers:
                    self._subscribers.remove(entry)

        return undo

    def emit(self, plugin_id: str | None, event: str, payload: Any = None) -> bool:
        """Queue `event` (namespaced `<plugin id>:` for a plugin); whether it was accepted."""
        if not isinstance(event, str) or not event:
            raise HermesError(f"ctx.emit: an event name is a non-empty string, not {event!r}")
        if plugin_id is not None:
            if event.startswith("hermes:"):
                raise HermesError(f"ctx.emit({event!r}) of plugin {plugin_id!r}: the 'hermes:' namespace is the host's")
            prefix = f"{plugin_id}:"
            event = event if event.startswith(prefix) else prefix + event
        depth = getattr(self._local, "depth", 0)
        if depth >= EVENT_DEPTH_MAX:
            log.warning("event %r dropped: emitted %d deliveries deep", event, depth)
            return False
        try:
            self._queue.put_nowait((event, payload, depth + 1))
        except queue.Full:
            log.warning("event %r dropped: %d events are already waiting", event, EVENT_PENDING_MAX)
            return False
        self._start()
        return True

    def _start(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._run, name="hermes-events", daemon=True)
                self._worker.start()

    def _run(self) -> None:
        from ._runtime.interrupts import leave_sigint_to_the_main_thread

        leave_sigint_to_the_main_thread()
        while True:
            event, payload, depth = self._queue.get()
            with self._lock:
                targets = [(cb, pid) for name, cb, pid in self._subscribers if name in (event, "*")]
            self._local.depth = depth
            for callback, plugin_id in targets:
                try:
                    callback(event, payload)
                except BaseException as exc:  # noqa: BLE001 - a subscriber never stops delivery
                    contained(exc)
                    log.warning("subscriber of plugin %r to %r failed: %s: %s", plugin_id, event,
                                type(exc).__name__, exc)
            self._local.depth = 0
            self._queue.task_done()

    def join(self) -> None:
        """Wait until every queued event has been delivered (for hosts and tests)."""
        self._queue.join()


# -- auxiliary tasks -------------------------------------------------------------------------------

BUILTIN_AUXILIARY = frozenset({
    "vision", "compression", "web_extract", "approval", "mcp", "title_generation", "skills_hub", "curator",
    "session_search", "flush_memories",
})
AUXILIARY_DEFAULTS: Mapping[str, Any] = {"provider": "auto", "model": "", "base_url": "", "api_key": "",
                                         "timeout": 60, "extra_body": {}}
_AUX_KEY = re.compile(r"[A-Za-z0-9_]+")


class AuxiliaryTask(NamedTuple):
    key: str
    display_name: str
    description: str
    defaults: Mapping[str, Any]
    plugin_id: str


class AuxiliaryTasks:
    """Plugins' own `auxiliary.<key>` LLM tasks, declared so that the operator can see and
    configure each like a built-in one (`hermes plugins doctor` lists them); `defaults` are what the
    plugin suggests."""

    def __init__(self) -> None:
        self._tasks: dict[str, AuxiliaryTask] = {}

    def add(self, task: AuxiliaryTask) -> Undo:
        where = f"ctx.register_auxiliary_task({task.key!r})"
        if not isinstance(task.key, str) or not _AUX_KEY.fullmatch(task.key):
            raise RegistrationError(f"{where}: a task key is letters, digits and '_'", plugin_id=task.plugin_id)
        if task.key in BUILTIN_AUXILIARY:
            raise RegistrationError(f"{where}: {task.key!r} is a built-in auxiliary task; choose another key",
                                    plugin_id=task.plugin_id)
        owner = self._tasks.get(task.key)
        if owner is not None and owner.plugin_id != task.plugin_id:
            raise RegistrationError(f"{where}: plugin {owner.plugin_id!r} already owns auxiliary.{task.key}",
                                    plugin_id=task.plugin_id)
        self._tasks[task.key] = task._replace(defaults={**AUXILIARY_DEFAULTS, **dict(task.defaults or {})})
        return lambda: self._tasks.pop(task.key, None) and None

    def get(self, key: str) -> AuxiliaryTask | None:
        return self._tasks.get(key)

    def all(self) -> list[AuxiliaryTask]:
        return sorted(self._tasks.values())


# -- what only some hosts serve --------------------------------------------------------------------

# ctx member → (capability, what a host needs to serve it)
UNSERVED: Mapping[str, tuple[str, str]] = {
    "register_platform": ("gateway", "a messaging gateway"),
    "register_platform_handler": ("gateway", "a messaging gateway"),
    "register_telegram_handler": ("gateway", "a messaging gateway"),
    "register_slack_action_handler": ("gateway", "a messaging gateway"),
    "platform_actions": ("gateway", "a messaging gateway"),
    "inject_message": ("conversation", "a running conversation that accepts injected messages"),
    "register_approval_transport": ("approval", "a human-approval UI"),
    "register_dashboard_auth_provider": ("dashboard", "a web dashboard"),
    "call_mcp": ("mcp", "MCP server connections"),
    "subagent_lifecycle": ("subagents", "subagent machinery"),
    "register_middleware": ("middleware", "tool and LLM middleware chains"),
    "register_context_reference": ("context_references", "`@prefix:` references in user messages"),
}


class Capabilities:
    """What the host serves beyond hermes-core: capability name → the host's object, whose
    method named like the ctx member is called with the plugin's id first."""

    def __init__(self) -> None:
        self._served: dict[str, Any] = {}

    def serve(self, capability: str, implementation: Any) -> None:
        self._served[capability] = implementation

    def served(self, capability: str) -> Any:
        return self._served.get(capability)

    def names(self) -> list[str]:
        return sorted(self._served)

    def call(self, plugin_id: str, member: str, *args: Any, **kwargs: Any) -> Any:
        implementation = self._served.get(UNSERVED[member][0])
        if implementation is None:
            raise unserved(plugin_id, member)
        return getattr(implementation, member)(plugin_id, *args, **kwargs)


def unserved(plugin_id: str, member: str) -> HostCapabilityError:
    capability, what = UNSERVED[member]
    return HostCapabilityError(
        f"ctx.{member} of plugin {plugin_id!r} needs a host with {what} (capability {capability!r}); this host "
        f"does not serve it. A host that has one declares it with PluginManager.serve({capability!r}, ...)"
    )


# -- ctx.manifest --------------------------------------------------------------------------------

class PluginManifest:
    """What a plugin was discovered as (its plugin.yaml, or its entry point), read-only:
    attributes (`ctx.manifest.name`, `.version`, `.kind`, ...) or keys (`ctx.manifest["name"]`)."""

    __slots__ = ("_fields",)

    def __init__(self, fields: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"the manifest has no field {name!r} (fields: {', '.join(self._fields)})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ctx.manifest is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __iter__(self) -> Any:
        return iter(self._fields)

    def get(self, key: str, default: Any = None) -> Any:
        return self._fields.get(key, default)

    def keys(self) -> list[str]:
        return list(self._fields)

    def __repr__(self) -> str:
        return f"PluginManifest({self._fields!r})"
