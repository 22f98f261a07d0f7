"""The gateway: every enabled platform's adapter connected, kept connected, and stopped cleanly.

`Gateway(manager).run()` starts each platform that is ready (`readiness`) and says in one line
why each other one is not; connects each adapter (`gateway.connect_timeout`); an adapter that
fails to connect, reports a fatal error or drops its connection is disconnected, reported and
connected again after a wait that doubles from `gateway.reconnect_delay` up to
`gateway.reconnect_max_delay` (a non-retryable fatal error stops it), while the others run on.
Messages go to `Conversations`. SIGINT/SIGTERM stop it: running turns get
`gateway.shutdown_grace` seconds to finish (a second signal cancels them at once), every
adapter is disconnected and every idle agent session closed. `status.json` in
`$HERMES_HOME/gateway/` says what runs (`hermes gateway status`).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_core import AlreadyRunningError, PlatformEntry, PluginManager, storable_text
from hermes_core import config_keys as keys
from hermes_core.agent import FIRED_HOOKS
from hermes_core.hosting import Backoff, in_thread, only_one, until_signal, write_json

from . import approvals
from .auth import authorised
from .conversations import Conversations
from .pairing import PairingStore
from .platforms.base import BasePlatformAdapter
from .platforms.event import MessageEvent
from .readiness import Readiness, readiness
from .routes import Routes

__all__ = ["Gateway", "GATEWAY_HOOKS", "status_path", "read_status"]

log = logging.getLogger("hermes.gateway")
# The hooks the gateway fires besides the reference agent's (HOOK-ARGS.md: Hermes' moments).
GATEWAY_HOOKS = frozenset({"pre_gateway_dispatch", "gateway_platform_event", "pre_approval_request", "post_approval_response"})


def _encodable(value: Any) -> Any:
    """What an adapter hands the gateway (an event, its source, their ids, names, text, media and
    metadata) with every lone surrogate a third-party adapter left in its text (a `json.loads` of
    "\\ud800") replaced by U+FFFD (`storable_text`), so that no store, log, file or model request
    downstream fails to encode it. The adapter's `raw_message` is left as it was."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {field.name: _encodable(getattr(value, field.name)) for field in dataclasses.fields(value)
                   if field.init and field.name != "raw_message"}
        try:
            return dataclasses.replace(value, **changes)
        except Exception:  # an adapter's class with an InitVar or an __init__ of its own: a copy, its fields set
            return _copied(value, changes)
    return value


def _copied(value: Any, changes: dict[str, Any]) -> Any:
    """A shallow copy of `value` with `changes` set (frozen or not), without calling its `__init__`;
    `value` itself, unchanged, when it cannot be copied."""
    try:
        copied = copy.copy(value)
        for name, item in changes.items():
            object.__setattr__(copied, name, item)
    except Exception:
        return value
    return copied


def status_path(home: Path) -> Path:
    return home / "gateway" / "status.json"


def read_status(home: Path) -> dict[str, Any] | None:
    """The running gateway's status (None when none runs: no file, or its process is gone)."""
    try:
        status = json.loads(status_path(home).read_bytes())
        os.kill(int(status["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return status if isinstance(status, dict) and status.get("state") == "running" else None


class Gateway:
    """The messaging gateway over a loaded `PluginManager` (see the module)."""

    def __init__(self, manager: PluginManager, *, say: Callable[[str], None] | None = None) -> None:
        self.manager = manager.load()
        self.manager.declare_fired_hooks(*FIRED_HOOKS, *GATEWAY_HOOKS)
        self.say = say or (lambda line: log.warning("%s", line))
        self.adapters: dict[str, BasePlatformAdapter] = {}
        self.states: dict[str, dict[str, Any]] = {}
        self.routes = Routes(self.manager.home)
        self.pairing = PairingStore()
        approvals.load_permanent(self.manager.home)
        self.conversations = Conversations(self.manager, self.routes, self.pairing, self.adapters, self.say)
        self.conversations.changed = lambda: self._write_status("running")
        self.manager.serve("conversation", self.conversations)
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._fatal: dict[str, asyncio.Event] = {}  # platform → set by its adapter's fatal-error report
        self._started = time.time()
        self._periodic: list[tuple[float, Callable[[], object], bool]] = []

    def every(self, seconds: float, work: Callable[[], object], *, at_start: bool = False) -> None:
        """Call `work()` (on a worker thread) every `seconds` while the gateway runs, first after
        `seconds`, or as soon as the platforms are started with `at_start` (the cron scheduler's
        ticks); a failure is logged and the next call comes."""
        self._periodic.append((seconds, work, at_start))

    def send_live(self, platform: str, chat_id: str, text: str, thread_id: str | None = None,
                  timeout: float = 60) -> bool:
        """Send `text` through the connected adapter of `platform`, from any thread but the gateway's
        own: False when none is connected; `ConnectionError` when it could not send."""
        loop, adapter = self.conversations.loop, self.adapters.get(platform)
        if loop is None or loop.is_closed() or adapter is None or not adapter.is_connected:
            return False
        metadata = {"thread_id": thread_id} if thread_id else None
        result = asyncio.run_coroutine_threadsafe(adapter.send(chat_id, text, metadata=metadata), loop).result(timeout)
        if getattr(result, "success", True) is False:
            raise ConnectionError(f"{platform}: {getattr(result, 'error', None) or 'the adapter could not send'}")
        return True

    def plan(self) -> list[Readiness]:
        """Every registered platform and whether it can start now."""
        return [readiness(entry, self.manager.config) for entry in self.manager.platforms.all()]

    # -- running -----------------------------------------------------------------------------------

    def run(self) -> int:
        """Run until SIGINT/SIGTERM (a second one cancels the running turns); 0, or 1 when no platform
        was ready to start."""
        with until_signal(self.stop):  # for the whole run, the loop's own teardown included
            return asyncio.run(self._main())

    async def _main(self) -> int:
        try:
            held = only_one(status_path(self.manager.home).with_name("gateway.lock"))  # the home's only gateway
        except AlreadyRunningError as exc:
            who = f" (pid {exc.pid})" if exc.pid is not None else ""
            self.say(f"another gateway is running for {self.manager.home}{who}; stop it first")
            return 1
        with held:
            return await self._serve()

    async def _serve(self) -> int:
        loop = asyncio.get_running_loop()
        self.conversations.loop = loop
        plan = self.plan()
        ready = [r for r in plan if r.ready]
        for item in plan:
            self._state(item.entry, "not started" if item.ready else ("not ready" if item.enabled else "disabled"),
                        item.why)
            if not item.ready and item.enabled:
                self.say(f"{item.entry.name}: not ready: {item.why}")
        if not ready:
            names = ", ".join(r.entry.name for r in plan) or "none registered"
            self.say(f"no messaging platform is enabled and ready (platforms: {names}); see `hermes gateway status`")
            return 1
        keepers = [loop.create_task(self._keep_connected(r), name=f"hermes-gateway-{r.entry.name}") for r in ready]
        keepers += [loop.create_task(self._repeat(seconds, work, at_start), name="hermes-gateway-periodic")
                    for seconds, work, at_start in self._periodic]
        self._write_status("running")
        try:
            await self._stop.wait()
        finally:
            await self._shutdown(keepers)
        return 0

    def _signalled(self) -> None:
        if self._stop.is_set():
            self._force.set()
        self._stop.set()

    def stop(self) -> None:
        """Stop the gateway as SIGTERM does (from any thread, or a signal handler); a second call
        cancels the running turns."""
        loop = self.conversations.loop
        if loop is None:
            self._signalled()  # not serving yet: it stops as soon as it starts
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._signalled)

    async def _repeat(self, seconds: float, work: Callable[[], object], at_start: bool = False) -> None:
        wait = not at_start
        while not self._stop.is_set():
            if wait:
                try:
                    await asyncio.wait_for(asyncio.shield(self._stop.wait()), seconds)
                    return
                except asyncio.TimeoutError:
                    pass
            wait = True
            try:
                await in_thread(work)
            except Exception as exc:  # noqa: BLE001 - the next call comes regardless
                log.warning("a periodic task of the gateway failed: %s: %s", type(exc).__name__, exc)

    async def _keep_connected(self, plan: Readiness) -> None:
        entry, config = plan.entry, self.manager.config
        backoff = Backoff(config.read(keys.GATEWAY_RECONNECT_DELAY), config.read(keys.GATEWAY_RECONNECT_MAX_DELAY))
        attempt, again = 0, False
        while not self._stop.is_set():
            attempt += 1
            adapter, why, retryable = await self._connect(plan, attempt > 1)
            if adapter is not None:
                self.adapters[entry.name] = adapter
                self._state(entry, "connected", "")
                self.say(f"{entry.name}: connected" + (" again" if again else "")
                         + (f" (attempt {attempt})" if attempt > 1 else ""))
                backoff.reset()
                attempt = 0
                lost = await self._watch(adapter, entry.name)
                self.adapters.pop(entry.name, None)
                if lost is None:
                    return
                why, retryable, again = lost, adapter.fatal_error_retryable or not adapter.has_fatal_error, True
                await self._disconnect(adapter)
            if not retryable:
                self._state(entry, "failed", why)
                self.say(f"{entry.name}: failed and will not be retried: {why}")
                return
            self._state(entry, "retrying", why)
            delay = backoff.next()
            self.say(f"{entry.name}: {why}; connecting again in {delay:g}s")
            try:
                await asyncio.wait_for(self._stop.wait(), delay)
            except asyncio.TimeoutError:
                pass

    async def _connect(self, plan: Readiness, again: bool) -> tuple[BasePlatformAdapter | None, str, bool]:
        """A connected adapter, or None, why not and whether trying again may help (an adapter's
        fatal error says it; anything else may be passing)."""
        entry = plan.entry
        self._state(entry, "connecting", "")
        adapter: Any = None
        try:
            adapter = entry.adapter_factory(plan.config)
            if adapter is None:
                return None, "its adapter_factory returned None", True
            self._wire(adapter, entry)
            connect = adapter.connect
            takes_flag = "is_reconnect" in inspect.signature(connect).parameters
            connected = await asyncio.wait_for(connect(is_reconnect=again) if takes_flag else connect(),
                                               self.manager.config.read(keys.GATEWAY_CONNECT_TIMEOUT))
        except asyncio.CancelledError:
            raise
        except asyncio.TimeoutError:
            connected, why = False, "connecting timed out"
        except Exception as exc:  # noqa: BLE001 - one platform's failure never stops the others
            connected, why = False, f"connecting failed: {type(exc).__name__}: {exc}"
        else:
            why = "connecting failed" + (f": {adapter.fatal_error_message}" if adapter.fatal_error_message else
                                         " (connect() returned False)")
        if connected is False or connected is None and not getattr(adapter, "is_connected", False):
            retryable = True
            if adapter is not None:
                retryable = not getattr(adapter, "has_fatal_error", False) or adapter.fatal_error_retryable
                await self._disconnect(adapter)
            return None, why, retryable
        if not adapter.is_connected:
            adapter._running = True  # connect() said so without _mark_connected()
        return adapter, "", True

    def _wire(self, adapter: BasePlatformAdapter, entry: PlatformEntry) -> None:
        conversations = self.conversations
        fatal = self._fatal[entry.name] = asyncio.Event()

        async def on_message(event: MessageEvent) -> str | None:  # the door of every adapter's messages
            return await conversations.handle(adapter, entry, _encodable(event), event.source)

        async def on_fatal(_: Any = None) -> None:
            fatal.set()

        async def on_platform_event(event: dict[str, Any], source: Any = None) -> None:
            event, source = _encodable(event), _encodable(source)
            if source is not None and not authorised(source, entry, adapter, self.pairing):
                return
            await self.manager.lifecycle.gateway_platform_event(
                platform=str(event.get("platform") or entry.name), event_type=str(event.get("event_type", "")),
                payload=dict(event.get("payload") or {})).arun()

        adapter.set_message_handler(on_message)
        adapter.set_fatal_error_handler(on_fatal)
        adapter.set_platform_event_handler(on_platform_event)
        adapter.set_session_store(self.routes)
        adapter.set_slack_action_dispatch(self.manager.platforms.slack_actions.dispatch)
        adapter._registered_max_length = int(entry.max_message_length or 0)
        adapter.gateway_runner = self

    async def _watch(self, adapter: BasePlatformAdapter, name: str) -> str | None:
        """Wait until `adapter` fails (why) or the gateway stops (None)."""
        fatal = self._fatal[name]
        while not self._stop.is_set():
            if fatal.is_set() or adapter.has_fatal_error:
                return f"connection lost: {adapter.fatal_error_message or 'the adapter reported a fatal error'}"
            if not adapter.is_connected:
                return "connection lost (the adapter disconnected)"
            try:
                await asyncio.wait_for(asyncio.shield(self._stop.wait()), 0.5)
            except asyncio.TimeoutError:
                pass
        return None

    async def _disconnect(self, adapter: BasePlatformAdapter) -> None:
        try:
            await asyncio.wait_for(adapter.disconnect(), 10)
        except Exception as exc:  # noqa: BLE001 - the others are disconnected regardless
            log.warning("%s: disconnect failed: %s: %s", adapter.platform.value, type(exc).__name__, exc)

    async def _shutdown(self, keepers: list[asyncio.Task[Any]]) -> None:
        self.conversations.stopping = True
        grace = self.manager.config.read(keys.GATEWAY_SHUTDOWN_GRACE)
        # (an adapter built on Hermes' own base class has no queues of ours)
        running = [task for adapter in self.adapters.values() for task in getattr(adapter, "_background_tasks", ())]
        queues = [queue for adapter in self.adapters.values() for queue in getattr(adapter, "_queues", {}).values()]
        dropped = sum(len(queue) for queue in queues)
        for queue in queues:
            queue.clear()  # a running turn ends its conversation's queue
        if running:
            self.say(f"stopping: {len(running)} running turn(s) may take up to {grace:g}s to finish "
                     "(a second Ctrl-C cancels them)" + (f"; {dropped} queued message(s) dropped" if dropped else ""))
            waiter = asyncio.ensure_future(asyncio.wait(running, timeout=grace))
            forced = asyncio.ensure_future(self._force.wait())
            await asyncio.wait([waiter, forced], return_when=asyncio.FIRST_COMPLETED)
            forced.cancel()
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        for task in keepers:
            task.cancel()
        await asyncio.gather(*keepers, return_exceptions=True)
        await asyncio.gather(*(self._disconnect(a) for a in list(self.adapters.values())))
        self.adapters.clear()
        await in_thread(self.conversations.close)
        self.routes.close()
        self._write_status("stopped")
        self.say("stopped")

    # -- status ----------------------------------------------------------------------------------------

    def _state(self, entry: PlatformEntry, state: str, detail: str) -> None:
        self.states[entry.name] = {"label": entry.label, "plugin": entry.plugin_id, "state": state,
                                   "detail": detail, "since": time.time()}
        if state != "not started":
            self._write_status("running" if not self._stop.is_set() else "stopping")

    def _write_status(self, state: str) -> None:
        path = status_path(self.manager.home)
        data = {"state": state, "pid": os.getpid(), "started_at": self._started, "updated_at": time.time(),
                "platforms": self.states, "conversations": len(self.conversations.agents)}
        try:
            write_json(path, data, durable=False)  # rewritten at every change; a power cut may lose the last
        except OSError as exc:  # pragma: no cover - a status file is a courtesy
            log.warning("could not write %s: %s", path, exc)
