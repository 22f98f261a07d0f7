"""The child process of an isolated plugin (`plugins.entries.<id>.isolation: process`):
`python -m hermes_core._standins.child FD MEMORY_MB`, started by the host (`isolated`).

It loads the one plugin with a loader of its own (the host's config, without time limits: the
host enforces them by killing this process), says what the plugin registered, then answers
the host's requests, each on a thread of a pool: a tool call, a command, one hook callback, a
tool's `check_fn`. It ends when the host closes the connection or dies (Linux: the parent-death
signal too), and never outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .._llm.host import LlmHost

from .. import _telemetry
from .._errors import note_memory_limit
from .._runtime.frames import FrameError, receive, send

_NO_LIMITS = {"tools": {"timeout": 0, "timeouts": {}}, "commands": {"timeout": 0}}


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that started it ends (the host's spawner thread,
    which lives as long as the host)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _jsonable(value: Any) -> Any:
    """`value` as it crosses back: JSON, else its text."""
    import json

    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


async def _awaited(result: Any) -> Any:
    return await result


class HostLlm:
    """The child's `LlmHost`: each `ctx.llm` call is made by the host (its credentials, trust,
    budgets and audit), the answer finished here as the plugin's client finishes it."""

    def __init__(self, child: Child) -> None:
        self._child = child

    def run(self, call: Any, finish: Any) -> Any:
        from .._llm.reply import LlmAnswer
        from .._llm.results import PluginLlmUsage

        fields = {name: getattr(call, name) for name in _CALL_FIELDS}
        if call.structured is not None:
            fields["structured"] = [call.structured.schema, call.structured.schema_name]
        answer = self._child.ask_host({"op": "llm", "call": fields})
        return finish(LlmAnswer(answer["text"], answer["provider"], answer["model"], answer["agent_id"],
                                PluginLlmUsage(**answer["usage"]), answer["tool_calls"], answer["finish_reason"]))

    async def arun(self, call: Any, finish: Any) -> Any:
        return await asyncio.to_thread(self.run, call, finish)


class HostCapability:
    """What the host serves (`ctx.call_mcp`, ...), asked of the host: any member, JSON arguments."""

    def __init__(self, child: Child) -> None:
        self._child = child

    def __getattr__(self, member: str) -> Any:
        def call(plugin_id: str, *args: Any, **kwargs: Any) -> Any:
            return self._child.ask_host({"op": "host_call", "member": member, "args": list(args), "kwargs": kwargs})

        return call


_CALL_FIELDS = ("kind", "messages", "temperature", "max_tokens", "timeout", "provider", "model", "agent_id",
                "profile", "purpose")


def _raised(error_type: str, message: str, fields: dict[str, Any]) -> BaseException:
    """The host's exception as this process raises it: the same hermes-core error class, with its
    fields (`plugin_id`, `key`, a budget's figures, ...)."""
    from .. import _errors

    cls = getattr(_errors, error_type, None)
    if not (isinstance(cls, type) and issubclass(cls, _errors.HermesError)):
        return _errors.PluginLlmError(f"{error_type}: {message}")
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(fields)
    return error


class Child:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send = threading.Lock()
        self.loader: Any = None
        self.plugin_id = ""
        self.megabytes = 0  # its memory limit (0: none)
        self._asked: dict[str, tuple[threading.Event, list[Any]]] = {}  # what this process asked the host
        self._numbers = iter(range(1, 1 << 62))

    def reply(self, message: dict[str, Any]) -> None:
        with self._send:
            send(self.sock, message)

    def ask_host(self, request: dict[str, Any]) -> Any:
        """Ask the host (its answer routed here by the main loop); its error raised here."""
        number = f"c{next(self._numbers)}"
        event, slot = threading.Event(), []  # type: ignore[var-annotated]
        self._asked[number] = (event, slot)
        trace = _telemetry.carried()  # the host goes on under this process's current span
        if trace is not None:
            request = {**request, "trace": trace}
        try:
            self.reply({"id": number, **request})
        except TypeError as exc:
            self._asked.pop(number, None)
            what = f"ctx.{request['member']}" if "member" in request else f"ctx.{request['op']}"
            raise TypeError(f"{what}: its arguments cannot cross to the host as JSON ({exc})") from None
        event.wait()
        answer = slot[0]
        if not answer.get("ok"):
            raise _raised(str(answer.get("error_type")), str(answer.get("error")), answer.get("error_fields") or {})
        return answer.get("result")

    def answered(self, message: dict[str, Any]) -> None:
        waiting = self._asked.pop(str(message.get("id")), None)
        if waiting is not None:
            waiting[1].append(message)
            waiting[0].set()

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        from .._config.config import Config
        from .._config.file import load_config
        from .._discovery.spec import PluginSpec
        from .._hooks.calls import LifecycleHooks
        from .._loading.loader import Loader
        from .._slots.declarations import BUILTIN_SLOTS
        from .._tools.call import dispatch
        from .fields import command_fields, tool_fields

        fields = dict(request["spec"])
        fields["path"] = Path(fields["path"]) if fields.get("path") else None
        fields["provides"] = {k: tuple(v) for k, v in (fields.get("provides") or {}).items()}
        for key in ("requires_env", "warnings", "shadows", "hermes_imports"):
            fields[key] = tuple(fields.get(key) or ())
        fields["python"], fields["isolation"] = "", ""  # this process is where it runs: it loads here
        spec = PluginSpec(**fields)
        note_memory_limit(spec.id, self.megabytes)
        plugins = dict(request["config"].get("plugins") or {})
        entries = dict(plugins.get("entries") or {})
        entries[spec.id] = {**(entries.get(spec.id) or {}), "isolation": "none"}  # here, it loads in this process
        config = Config({**request["config"], **_NO_LIMITS,
                         "plugins": {**plugins, "entries": entries, "hook_callback_timeout": 0}})
        home = Path(request["home"])
        host = HostLlm(self)

        def dispatch_tool(name: str, args: Any, **kwargs: Any) -> str:  # ctx.dispatch_tool: the plugin's own tools
            return dispatch(loader.tools, LifecycleHooks(loader.hooks), name, args, kwargs=kwargs)

        loader = self.loader = Loader(
            home=home, slots=BUILTIN_SLOTS, config=lambda: config,
            current_config=lambda: load_config(home),  # ctx.get_config: the file as it is now
            hook_timeout=lambda: 0, dispatch=dispatch_tool,
            llm_host=lambda: cast("LlmHost", host))  # ctx.llm: made by the host, which holds the credentials
        for capability in request.get("capabilities", ()):  # ctx.call_mcp, ...: served by the host
            loader.capabilities.serve(capability, HostCapability(self))
        self.plugin_id = spec.id
        record = loader.load(spec)
        offered = [loader.tools.entry(name) for name in record.registered.get("tools", [])]
        tools = [tool_fields(entry) for entry in offered if entry is not None]
        commands = [command_fields(c) for c in loader.commands if c.plugin_id == spec.id]
        hooks = [[hook, index] for hook in dict.fromkeys(record.registered.get("hooks", []))
                 for index, _ in enumerate(self._callbacks(hook))]
        return {"status": record.status, "failure": str(record.failure) if record.failure else None,
                "failure_type": record.failure.type if record.failure else None,
                "registered": record.registered, "warnings": record.warnings, "tools": tools,
                "commands": commands, "hooks": hooks, "pid": os.getpid()}

    def _callbacks(self, hook: str) -> list[Any]:
        return [c for c in self.loader.hooks.callbacks(hook) if c.plugin_id == self.plugin_id]

    def answer(self, request: dict[str, Any]) -> Any:
        op, loader = request["op"], self.loader
        if op == "tool":
            return loader.tools.dispatch_without_hooks(request["name"], request["args"], **request.get("kwargs", {}))
        if op == "command":
            return loader.commands.run(request["name"], request.get("raw", ""))
        if op == "check":
            tool = loader.tools.get(request["name"])
            return list(tool.availability()) if tool is not None else [False, "no such tool"]
        if op == "hook":
            callback = self._callbacks(request["hook"])[request["index"]]
            result = callback.fn(**callback.arguments(request["kwargs"]))
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
            return _jsonable(result)
        raise ValueError(f"unknown request {op!r}")

    def serve(self, request: dict[str, Any]) -> None:
        """Answer one request of the host's, under the span it carried (with the spans made since)."""
        trace = request.pop("trace", None)
        try:
            with _telemetry.continued(trace, request.get("name") if request["op"] == "tool" else None):
                result = self.answer(request)
            answer = {"id": request["id"], "ok": True, "result": result}
        except BaseException as exc:  # noqa: BLE001 - the host's call gets it as the plugin's failure
            answer = {"id": request["id"], "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        if trace:
            answer.update(_telemetry.collected())  # the spans and metrics made for it (and since)
        try:
            self.reply(answer)
        except OSError:
            return  # the host is gone
        except Exception as exc:  # noqa: BLE001 - what cannot cross (not JSON): the call is answered all the same
            with contextlib.suppress(OSError):  # the host went away meanwhile
                self.reply({"id": request["id"], "ok": False,
                            "error": f"the plugin's answer could not be sent to the host ({type(exc).__name__}: {exc})"})


def main(argv: list[str]) -> None:
    _die_with_parent()
    fd, megabytes = int(argv[0]), int(argv[1])
    parent = os.getppid()
    if parent == 1:
        os._exit(0)  # the host is already gone
    _limit_memory(megabytes)
    sock = socket.socket(fileno=fd)
    child = Child(sock)
    child.megabytes = megabytes
    _telemetry.sending(lambda ended: child.reply({"op": "telemetry", **ended}))  # what ends between calls
    try:
        first = receive(sock)
        try:
            child.reply({"id": first["id"], "ok": True, "result": child.load(first)})
        except BaseException as exc:  # noqa: BLE001 - said to the host as the plugin's load failure
            child.reply({"id": first["id"], "ok": False, "error": f"{type(exc).__name__}: {exc}"})
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="hermes-child")  # calls at once
        while True:
            message = receive(sock)
            if "op" in message:  # the host asks
                pool.submit(child.serve, message)
            else:  # the host answers what this process asked
                child.answered(message)
    except (FrameError, OSError):
        pass
    _telemetry.flush_to_host()  # what ended since the last answer: the host reads until this process exits
    os._exit(0)  # the host closed the connection: plugin threads are not waited for


if __name__ == "__main__":
    main(sys.argv[1:])
