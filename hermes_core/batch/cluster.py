"""The items of a batch on a Ray cluster (`hermes batch run --ray [ADDRESS]`); `ray` is an optional
extra (`pip install 'hermes-core[ray]'`), imported by this module alone.

Each node runs `Worker` actors: each loads the plugins once (a `PluginManager` of its own, with the
driver's config.yaml shipped to it without credentials) and runs several items at once on its
threads. The driver (the `hermes` process) alone writes the output folder: rows stream back to it
as items finish, so the output and its resumption are the same as on one machine. A worker that
dies mid-item (a killed process, a lost node) is restarted by Ray, and its items are run again.

Credentials stay where they are: the shipped config loses every value under a key that names one
(`api_key`, `token`, `secret`, `password`, ...), and each worker reads its provider keys from its own
environment, as `hermes` does. The plugins must be importable on the workers: entry-point plugins
installed in the workers' environment (Ray's `runtime_env`, `pip`), folder plugins under the
driver's `$HERMES_HOME` path when the workers see it (a shared disk, or the driver's own machine),
else under the workers' own `HERMES_HOME`.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_core import Config, PluginManager
from hermes_core.agent import SessionStore
from hermes_core.hosting import flush_traces, trace_headers

from .dataset import Item
from .runner import BatchOptions, Models, Outcome, item_trace, offered_tools, run_item

__all__ = ["RayExecutor", "Worker", "without_credentials"]

_CREDENTIALS = ("api_key", "apikey", "token", "secret", "password", "credential", "authorization")
_ATTEMPTS = 3  # runs of one item on workers that died under it, before it is a failure
_COMEBACK = 60.0  # seconds an item waits for a restarting worker (Ray's ActorUnavailableError) before it fails
_FLUSH = 5.0  # seconds the workers may take to export their queued spans before they are killed


def without_credentials(value: Any) -> Any:
    """`value` (config.yaml's data) without anything under a key that names a credential."""
    if isinstance(value, Mapping):
        return {key: without_credentials(item) for key, item in value.items()
                if not any(word in str(key).lower().replace("-", "_") for word in _CREDENTIALS)}
    if isinstance(value, list):
        return [without_credentials(item) for item in value]
    return value


class Worker:
    """A Ray actor running items with the plugins loaded once (`ray.remote(Worker)` by the driver)."""

    def __init__(self, config: dict[str, Any], home: str, options: BatchOptions) -> None:
        where = Path(home) if Path(home).is_dir() else Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")
        self._manager = PluginManager(home=where, config=Config(config), lazy=True).load()
        self._models = Models(self._manager)
        self._options = options
        self._names, self._toolsets = offered_tools(self._manager, options)
        self._sessions = Path(tempfile.mkdtemp(prefix="hermes-batch-"))  # the driver alone writes the output
        self._stores: dict[int, SessionStore] = {}
        self._lock = threading.Lock()

    def pid(self) -> int:
        return os.getpid()

    def run(self, item: Item, batch: dict[str, str] | None = None) -> dict[str, Any]:
        """Run `item`, in a trace of its own linked to the batch's span (`batch`: its headers)."""
        with self._lock:
            store = self._stores.get(threading.get_ident())
            if store is None:
                store = self._stores[threading.get_ident()] = SessionStore(self._sessions)
        with item_trace(item, batch):
            return run_item(item, self._models, self._options, self._names, self._toolsets, store)

    def flush(self) -> None:
        """Export the spans still queued here: a worker is killed at the batch's end, not exited."""
        flush_traces(_FLUSH)


class RayExecutor:
    """Items on `Worker` actors of a Ray cluster, `size` at once in all (the `Executor` of `run_batch`)."""

    def __init__(self, address: str | None, manager: PluginManager, options: BatchOptions, size: int) -> None:
        import importlib
        import logging

        ray: Any = importlib.import_module("ray")  # untyped where it matters; the optional extra
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address or None, logging_level=logging.WARNING, log_to_driver=False)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = max(1, min(size, cpus))
        self.capacity = size
        config = without_credentials(dict(manager.config.section()))
        actor = ray.remote(Worker).options(max_concurrency=math.ceil(size / count), max_restarts=-1,
                                           num_cpus=0, scheduling_strategy="SPREAD")
        self.workers: list[Any] = [actor.remote(config, str(manager.home), options) for _ in range(count)]
        self._running: dict[Any, tuple[Item, int, float]] = {}  # a call's future: its item, attempt, waiting since
        self._later: list[tuple[float, Item, int, float]] = []  # resubmitted once its time comes
        self._turn = 0
        self._batch = trace_headers()  # the batch's span (made under it by `run_batch`), sent with each item

    def submit(self, item: Item, attempt: int = 1, waiting: float = 0.0) -> None:
        worker = self.workers[self._turn % len(self.workers)]
        self._turn += 1
        self._running[worker.run.remote(item, self._batch)] = (item, attempt, waiting)

    def wait(self, timeout: float) -> list[Outcome]:
        ray: Any = self._ray
        now = time.monotonic()
        for entry in [e for e in self._later if e[0] <= now]:
            self._later.remove(entry)
            self.submit(*entry[1:])
        if not self._running:
            if self._later:  # only runs waiting for their time: wait a little, as ray.wait would
                time.sleep(min(timeout, 0.1))
            return []
        ready, _ = ray.wait(list(self._running), num_returns=len(self._running), timeout=timeout)
        done: list[Outcome] = []
        for future in ready:
            item, attempt, waiting = self._running.pop(future)
            try:
                done.append((item, ray.get(future), None))
            except ray.exceptions.ActorUnavailableError as exc:  # its worker is restarting: the same run, later
                since = waiting or time.monotonic()
                if time.monotonic() - since < _COMEBACK:
                    self._later.append((time.monotonic() + 0.5, item, attempt, since))
                else:
                    done.append((item, None, f"its worker did not come back within {_COMEBACK:.0f} s: "
                                             f"{type(exc).__name__}"))
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                if attempt < _ATTEMPTS:  # its worker died under it: run again (Ray restarts the worker)
                    self._later.append((time.monotonic() + 0.5, item, attempt + 1, 0.0))
                else:
                    done.append((item, None, f"its worker died {attempt} times: {type(exc).__name__}"))
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause if exc.cause is not None else exc
                done.append((item, None, f"{type(cause).__name__}: {cause}"))
        return done

    def close(self) -> None:
        for future in self._running:
            self._ray.cancel(future, force=False)
        if self._batch:  # traces are exported: the workers send theirs first
            try:
                self._ray.wait([worker.flush.remote() for worker in self.workers], num_returns=len(self.workers),
                               timeout=_FLUSH + 1)
            except Exception:  # noqa: BLE001 - a worker gone or dying: its queued spans are lost, not the batch
                pass
        for worker in self.workers:
            self._ray.kill(worker)
