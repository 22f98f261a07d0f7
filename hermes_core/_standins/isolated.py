"""Plugins in a process of their own (`plugins.entries.<id>.isolation: process`).

The plugin is loaded in a child (`python -m hermes_core._standins.child`, the operator's `python` if given),
which says what it registered; the host registers stand-ins that send each call over a socket:
tools (with their schemas; a `check_fn` is asked in the child), slash commands and hook callbacks.
Arguments and results cross as JSON. A child that dies (exits, a signal, its memory limit) or
runs past a call's time limit (then it is killed) fails the calls in flight with a line that names
the plugin and how it died; the next call starts it again, at most `RESTARTS` times a minute, after
which the plugin is failed until a reload. The child's environment has no LLM provider keys, it
is waited for when it ends (no zombie), and it ends with the host (its connection's end, and on
Linux the parent-death signal, bound to a spawner thread that lives as long as the host).

This is a crash boundary, not a security boundary: the child runs as the same user, in the same
`$HERMES_HOME`.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import _telemetry, config_keys as keys
from .._errors import PluginProcessError, RegistrationError, owner
from .._llm.routes import PROVIDERS
from .._loading.record import LoadFailure
from .._loading.registrar import Loaded, Registrar
from .._runtime.processes import kill_group
from .._runtime.frames import FrameError, receive, send
from .._runtime.invoke import keeping_own_limit
from . import closing
from .fields import Unavailable, stand_in_command, stand_in_tool
from .kinds import ISOLATED

if TYPE_CHECKING:
    from .._config.config import Config
    from .._loading.record import PluginRecord

__all__ = ["RESTARTS", "ChildProcess", "Isolates", "child_environment", "isolate", "stand_ins"]

log = logging.getLogger("hermes_core.plugins")

CHILD = "hermes_core._standins.child"  # the child's module, run with `python -m`
RESTARTS = 3  # starts a minute after the first, before the plugin is failed until a reload
LOAD_SECONDS = 120.0  # what a child may take to import and register its plugin


def _key_names(value: Any) -> set[str]:
    """Every `api_key_env` named anywhere in config.yaml's data."""
    if isinstance(value, Mapping):
        found = {str(v) for k, v in value.items() if k == "api_key_env" and isinstance(v, str)}
        return found.union(*(_key_names(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_key_names(v) for v in value))
    return set()


def child_environment(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The host's environment without the LLM provider keys: the providers' variables, every
    `api_key_env` the config names, and any variable whose name holds `API_KEY`."""
    drop = {env for _, env in PROVIDERS.values()} | _key_names(config)
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k not in drop and "API_KEY" not in k.upper()}


class _Spawner:
    """Starts children from one daemon thread that lives as long as the host, so that the Linux
    parent-death signal (bound to the thread that forked) fires only when the host ends."""

    def __init__(self) -> None:
        self._requests: queue.Queue[tuple[Callable[[], Any], list[Any], threading.Event]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, start: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="hermes-isolation", daemon=True)
                self._thread.start()
        slot: list[Any] = []
        done = threading.Event()
        self._requests.put((start, slot, done))
        done.wait()
        if isinstance(slot[0], BaseException):
            raise slot[0]
        return slot[0]

    def _serve(self) -> None:
        while True:
            start, slot, done = self._requests.get()
            try:
                slot.append(start())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                slot.append(exc)
            done.set()


_SPAWNER = _Spawner()


def how_it_ended(code: int | None, memory_mb: int) -> str:
    """`was killed by SIGSEGV`, `exited with code 3`, ... (and the memory limit when it may be why)."""
    if code is None:
        return "ended"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    hint = f" (its memory limit, plugins.entries.<id>.memory_mb, is {memory_mb} MB)" if memory_mb and code == 1 else ""
    return f"exited with code {code}{hint}"


class ChildProcess:
    """One isolated plugin's child: started on first need (`start`), kept warm, asked with `call`."""

    def __init__(self, spec: Any, *, home: Path, config: Mapping[str, Any], python: str | None = None,
                 memory_mb: int = 0, llm_host: Callable[[], Any] | None = None, capabilities: Any = None) -> None:
        self.spec = spec
        self.plugin_id: str = spec.id
        self._home, self._config = home, dict(config)
        self._llm_host = llm_host  # what makes the plugin's ctx.llm calls
        self._capabilities = capabilities  # what the host serves (ctx.call_mcp, ...), asked for the plugin
        self._python = python or sys.executable
        self.memory_mb = memory_mb
        self._lock = threading.RLock()
        self._sending = threading.Lock()  # one frame at a time on the socket, from any thread
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._pending: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._ids = itertools.count(1)
        self._starts: collections.deque[float] = collections.deque()
        self.failed: str | None = None  # why it is not started again (until a reload)
        self.loaded: dict[str, Any] | None = None  # what the plugin registered, from its first start
        self.pid: int | None = None
        self.on_failed: Callable[[str], None] = lambda why: None  # told once it is failed until a reload

    # -- the process --------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """The child, running: started if it is not; what the plugin registered there."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None and self.loaded is not None:
                return self.loaded
            if self.failed:
                raise PluginProcessError(self.failed, plugin_id=self.plugin_id)
            now = time.monotonic()
            while self._starts and now - self._starts[0] > 60:
                self._starts.popleft()
            if len(self._starts) > RESTARTS:
                self.failed = (f"{owner(self.plugin_id)}: its process died {len(self._starts)} times within a minute; "
                               "it is failed until the plugins are reloaded")
                self.on_failed(self.failed)
                raise PluginProcessError(self.failed, plugin_id=self.plugin_id)
            self._starts.append(now)
            self._spawn()
            served = self._capabilities.names() if self._capabilities is not None else []
            loaded = self._request({"op": "load", "spec": _spec_fields(self.spec), "config": self._config,
                                    "home": str(self._home), "capabilities": served}, LOAD_SECONDS, "loading it")
            if self.loaded is None:
                self.loaded = loaded
            self.pid = loaded.get("pid")
            assert self.loaded is not None
            return self.loaded

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair()
        command = [self._python, "-m", CHILD, str(theirs.fileno()), str(self.memory_mb)]
        environment = child_environment(self._config)
        try:
            proc: subprocess.Popen[bytes] = _SPAWNER.run(lambda: subprocess.Popen(
                command, pass_fds=[theirs.fileno()], env=environment, stdin=subprocess.DEVNULL,
                cwd=str(self._home) if self._home.is_dir() else None, start_new_session=True))
        except OSError as exc:
            ours.close()
            raise PluginProcessError(f"{owner(self.plugin_id)}: its process could not start with "
                                     f"{self._python}: {exc}", plugin_id=self.plugin_id) from None
        finally:
            theirs.close()
        self._proc, self._sock, self._pending = proc, ours, {}  # the calls in flight of this process alone
        if _telemetry.ACTIVE is not None:
            closing.traced(self)  # closed at the host's exit, before the SDK's last export
        self._reader = threading.Thread(target=self._read, args=(proc, ours, self._pending),
                                        name=f"hermes-isolation-{self.plugin_id}", daemon=True)
        self._reader.start()

    def _read(self, proc: subprocess.Popen[bytes], sock: socket.socket,
              pending: dict[int, tuple[threading.Event, list[Any]]]) -> None:
        """Hand each answer to its caller; when the child is gone, wait for it and fail what it had in flight."""
        try:
            while True:
                message = receive(sock)
                if message.get("op") == "telemetry":  # spans and metrics that ended between calls
                    _telemetry.relayed(message)
                    continue
                if "op" in message:  # the child asks (ctx.llm): answered on a thread of its own
                    threading.Thread(target=self._answer, args=(sock, message), daemon=True).start()
                    continue
                waiting = pending.pop(int(message.get("id", 0)), None)
                if waiting is not None:
                    waiting[1].append(message)
                    waiting[0].set()
        except (FrameError, OSError, ValueError):
            pass
        code = proc.wait()  # reaped: never a zombie
        ended = how_it_ended(code, self.memory_mb)
        with self._lock:
            if self._proc is proc:
                self._proc, self._sock = None, None
            left = list(pending.values())
            pending.clear()
        sock.close()
        for event, slot in left:
            slot.append({"died": ended})
            event.set()

    def _answer(self, sock: socket.socket, request: dict[str, Any]) -> None:
        """Answer the child's request, made here as the plugin (never as the child says): a `ctx.llm`
        call, or a ctx member a capability of this host serves (`ctx.call_mcp`, ...)."""
        try:
            op = request.get("op")
            with _telemetry.attached(request.get("trace")):  # under the plugin's span in its process
                if op == "llm" and self._llm_host is not None:
                    result = _llm_call(self._llm_host(), self.plugin_id, request["call"])
                elif op == "host_call" and self._capabilities is not None:
                    result = self._capabilities.call(self.plugin_id, str(request["member"]),
                                                     *request.get("args", ()), **request.get("kwargs", {}))
                else:
                    raise ValueError(f"this host answers no {op!r} from a plugin's process")
            answer = {"id": request["id"], "ok": True, "result": result}
        except BaseException as exc:  # noqa: BLE001 - raised again in the child, as the same class
            answer = {"id": request["id"], "ok": False, "error_type": type(exc).__name__, "error": str(exc),
                      "error_fields": {k: v for k, v in vars(exc).items() if isinstance(v, (str, int, float, bool))}}
        try:
            with self._sending:
                try:
                    send(sock, answer)
                except TypeError as exc:
                    send(sock, {"id": request["id"], "ok": False, "error_type": "TypeError",
                                "error": f"the host's answer to {request.get('op')} cannot cross as JSON: {exc}"})
        except OSError:
            pass  # the child is gone

    def kill(self) -> None:
        """Kill the child now (a call past its time limit); the next call starts another."""
        with self._lock:
            proc, sock = self._proc, self._sock
            self._proc, self._sock = None, None
        if proc is not None:
            kill_group(proc)  # with whatever the plugin started in it
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """End the child: its connection closed our way (it exits, sending what is left of its
        spans, read here until it is gone), killed if it does not."""
        closing.forget(self)
        with self._lock:
            proc, sock, reader = self._proc, self._sock, self._reader
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if proc is not None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            kill_group(proc)  # it, if it did not exit, and what it left running
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=5)  # its last message relayed; the connection's end is seen once it exited
        if sock is not None and reader is not None and reader.is_alive():  # something it started holds it open
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- calls ----------------------------------------------------------------------------

    def call(self, op: str, what: str, seconds: float | None = None, **payload: Any) -> Any:
        """Ask the child (started if it is not) for `op`; `what` names the call in errors. While
        traces are exported, the call carries the current span, and the answer the spans the
        plugin made in its process (`_telemetry.relay`)."""
        self.start()
        trace = _telemetry.carried()
        if trace is not None:
            payload["trace"] = trace
        return self._request({"op": op, **payload}, seconds, what)

    def _request(self, message: dict[str, Any], seconds: float | None, what: str) -> Any:
        with self._lock:
            sock, pending = self._sock, self._pending
            number = next(self._ids)
            event, slot = threading.Event(), []  # type: ignore[var-annotated]
            pending[number] = (event, slot)
        if sock is None:  # killed between its start and this call
            pending.pop(number, None)
            raise PluginProcessError(f"{owner(self.plugin_id)}: its process ended before {what}; it is started "
                                     "again at the next call", plugin_id=self.plugin_id)
        try:
            with self._sending:
                send(sock, {"id": number, **message})
        except TypeError as exc:
            pending.pop(number, None)
            raise TypeError(f"{what}: its arguments cannot cross to {owner(self.plugin_id)}'s process as JSON "
                            f"({exc})") from None
        except OSError:
            pass  # the reader sees it end and says how
        if not event.wait(seconds):
            pending.pop(number, None)
            self.kill()
            raise PluginProcessError(f"{owner(self.plugin_id)}: {what} did not finish within {seconds:g} s; its "
                                     "process was killed (restarted at the next call)", plugin_id=self.plugin_id)
        answer = slot[0]
        if "spans" in answer or "metrics" in answer:
            _telemetry.relayed(answer)
        if "died" in answer:
            raise PluginProcessError(f"{owner(self.plugin_id)}: its process {answer['died']} during {what} "
                                     "(restarted at the next call)", plugin_id=self.plugin_id)
        if not answer.get("ok"):
            raise PluginProcessError(f"{owner(self.plugin_id)}: {what} failed in its process: {answer.get('error')}",
                                     plugin_id=self.plugin_id)
        return answer.get("result")


def _llm_call(host: Any, plugin_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Make a plugin's `ctx.llm` call its process sent; the answer as plain data."""
    from .._llm.host import Call
    from .._llm.structured import Structured

    structured = fields.pop("structured", None)
    call = Call(plugin_id, **fields, structured=Structured(*structured) if structured else None)
    answer = host.run(call, lambda answer: answer)
    usage = answer.usage
    return {"text": answer.text, "provider": answer.provider, "model": answer.model, "agent_id": answer.agent_id,
            "usage": {name: getattr(usage, name) for name in ("input_tokens", "output_tokens", "total_tokens",
                                                               "cache_read_tokens", "cache_write_tokens", "cost_usd")},
            "tool_calls": answer.tool_calls, "finish_reason": answer.finish_reason}


def _spec_fields(spec: Any) -> dict[str, Any]:
    fields: dict[str, Any] = spec._asdict()
    fields["path"] = str(fields["path"]) if fields.get("path") is not None else None
    fields["provides"] = {k: list(v) for k, v in dict(fields.get("provides") or {}).items()}
    return fields


class Isolates(Loaded, Protocol):
    """What isolating a plugin reaches of its loader (a `Loader`): what a registrar reaches (its home,
    registries and the host services the child asks for), and the plugin's registrar."""

    def registrar(self, plugin_id: str) -> Registrar: ...


def isolate(loader: Isolates, record: PluginRecord, config: Config) -> None:
    """Load `record`'s plugin in a process of its own, and register stand-ins for what it registered there."""
    started = time.perf_counter()
    child = ChildProcess(record.spec, home=loader.home, config=config.section(),
                         python=config.read(keys.PLUGIN_PYTHON, record.id) or record.spec.python or None,
                         memory_mb=config.read(keys.PLUGIN_MEMORY_MB, record.id), llm_host=loader.llm_host,
                         capabilities=loader.capabilities)
    record.undos.append(child.close)
    record.process = child

    def failed(why: str) -> None:  # its stand-ins stay, each call answering why
        record.status, record.failure = "failed", LoadFailure("PluginProcessError", why, "its process")
        log.warning("%s", why)

    child.on_failed = failed
    stand_ins(child, loader.registrar(record.id), loader.tools.limit, loader.commands.limit, loader.hooks.limit)
    record.import_ms = round((time.perf_counter() - started) * 1000, 3)


def stand_ins(child: ChildProcess, registrar: Registrar, tool_limit: Callable[[str], float | None],
              command_limit: Callable[[], float | None], hook_limit: Callable[[], float | None]) -> None:
    """Register what the plugin registered in its process, each call sent there: the kinds isolation
    can stand in for (`kinds.ISOLATED`: its tools, commands and hook callbacks). Anything else it
    registered cannot cross: `RegistrationError`."""
    loaded = child.start()
    if loaded["status"] != "ok":
        raise PluginProcessError(f"in its process: {loaded['failure']}", plugin_id=child.plugin_id)
    other = sorted(set(loaded["registered"]) - ISOLATED)
    if other:
        raise RegistrationError(
            f"{owner(child.plugin_id)} registers {', '.join(other)}, which cannot run in a process of its own yet; "
            f"remove plugins.entries.{child.plugin_id}.isolation to load it in the host's process",
            plugin_id=child.plugin_id)

    def tool(name: str) -> Callable[..., Any]:
        def handler(args: Any, **kwargs: Any) -> Any:
            return child.call("tool", f"tool {name!r}", tool_limit(name), name=name, args=args, kwargs=kwargs)

        return keeping_own_limit(handler)  # the child is killed at the limit, not abandoned

    def check(name: str) -> Callable[[], Any]:
        def check_fn() -> Any:
            ok, reason = child.call("check", f"check_fn of tool {name!r}", 30.0, name=name)
            return True if ok else Unavailable(reason)

        return check_fn

    def command(name: str) -> Callable[[str], Any]:
        def handler(raw: str) -> Any:
            return child.call("command", f"/{name}", command_limit(), name=name, raw=raw)

        return keeping_own_limit(handler)

    def hook(name: str, index: int) -> Callable[..., Any]:
        def callback(**kwargs: Any) -> Any:
            return child.call("hook", f"hook {name}", hook_limit(), hook=name, index=index, kwargs=kwargs)

        callback.__qualname__ = f"{name}#{index + 1} (in its process)"  # as the hook runner names it
        return keeping_own_limit(callback)

    for t in loaded["tools"]:  # answered by this process's call to the child: sync here, whatever it is there
        registrar.add_tool(stand_in_tool(t, tool(t["name"]), child.plugin_id,
                                         check_fn=check(t["name"]) if t["checked"] else None))
    for c in loaded["commands"]:
        registrar.add_command(stand_in_command(c, command(c["name"]), child.plugin_id))
    for name, index in loaded["hooks"]:
        registrar.add_hook(name, hook(name, index))
