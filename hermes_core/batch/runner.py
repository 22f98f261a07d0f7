"""Running a batch: items at once on worker threads of one process, each through the reference
agent in a fresh session; the finished ones written as they finish, by this thread alone.

The agent's work is waiting for the model, so `concurrency` threads keep that many conversations
going (sync tools run on the plugins' workers as in any session). A run stops scheduling when it
is asked to (`stop`, the first Ctrl-C) or its spend reaches `max_cost`, and lets the running items
finish; `abort` (the second Ctrl-C) stops waiting for them. Either way the statistics are written
and the next run on the same folder goes on where this one ended.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Protocol

import attrs

from hermes_core import Config, PluginManager
from hermes_core.agent import Agent, SessionStore
from hermes_core.hosting import ToolSelection, new_trace, trace_headers

from .dataset import Item
from .output import OutputDir
from .trajectory import sharegpt, tool_stats

__all__ = ["BatchOptions", "Executor", "Models", "Outcome", "Statistics", "Threads", "local_executor", "offered_tools",
           "item_trace", "run_batch", "run_item"]


@attrs.frozen
class BatchOptions:
    """How a batch runs: items at once, memory on or off, the tools offered (toolsets and tool names,
    globs allowed, as `hosting.ToolSelection` takes them; both empty: every tool), and the spend at
    which no new item starts; `prompt_files=False`: no item's system prompt has the prompt's files
    (SOUL.md, the project context, MEMORY.md, USER.md), as an item's own `prompt_files: false`."""

    concurrency: int = 4
    memory: bool = False
    toolsets: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    max_cost: float | None = None
    prompt_files: bool = True


@attrs.define
class Statistics:
    """How a batch stands: this run's counts and the totals of every item finished in the folder."""

    total: int
    already: int = 0
    completed: int = 0
    partial: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0
    tools: dict[str, dict[str, int]] = attrs.field(factory=dict)
    started: float = attrs.field(factory=time.monotonic)
    stopped: str | None = None  # "interrupted", "aborted", "max_cost"; None: it ran to the end
    running: int = 0

    @property
    def done(self) -> int:
        """Items finished by this run (completed or partial)."""
        return self.completed + self.partial

    @property
    def remaining(self) -> int:
        return self.total - self.already - self.done

    @property
    def wall(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        return self.done / self.wall if self.wall > 0 else 0.0

    def add(self, row: dict[str, Any]) -> None:
        """Count a finished item's row (of this run, or of an earlier one)."""
        self.input_tokens += int(row.get("usage", {}).get("input_tokens") or 0)
        self.output_tokens += int(row.get("usage", {}).get("output_tokens") or 0)
        self.cost_usd += float(row.get("cost_usd") or 0.0)
        self.model_calls += int(row.get("api_calls") or 0)
        for name, counts in (row.get("tool_stats") or {}).items():
            total = self.tools.setdefault(name, {"count": 0, "success": 0, "failure": 0})
            for key in total:
                total[key] += int(counts.get(key, 0))

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.total, "finished_before": self.already, "completed": self.completed,
            "partial": self.partial, "failed": self.failed, "not_run": self.remaining - self.failed,
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6), "model_calls": self.model_calls,
            "tool_stats": {name: {**counts, "success_rate": _rate(counts["success"], counts)}
                           for name, counts in sorted(self.tools.items()) if counts["count"]},
            "wall_seconds": round(self.wall, 3), "items_per_second": round(self.rate, 3), "stopped": self.stopped,
            "finished_at": _now(),
        }


def _rate(part: int, counts: dict[str, int]) -> float:
    settled = counts["success"] + counts["failure"]
    return round(100 * part / settled, 2) if settled else 0.0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Models:
    """The plugin manager of each model a dataset asks for (the configured one: the host's own)."""

    def __init__(self, manager: PluginManager) -> None:
        self._base = manager
        self._managers: dict[str, PluginManager] = {}
        self._lock = threading.Lock()

    def get(self, model: str | None) -> PluginManager:
        configured = self._base.config.get("model.model")
        if model is None or model == configured:
            return self._base
        with self._lock:
            if model not in self._managers:
                data = dict(self._base.config.section())
                data["model"] = {**self._base.config.section("model"), "model": model}
                self._managers[model] = PluginManager(home=self._base.home, config=Config(data, self._base.config.path),
                                                      lazy=True).load()
            return self._managers[model]


def offered_tools(manager: PluginManager, options: BatchOptions) -> tuple[frozenset[str] | None, dict[str, str]]:
    """The tool names the options offer (None: every tool), and each tool's toolset; a toolset or
    tool that no tool has is a `ValueError` naming what there is."""
    infos = manager.tool_infos()
    selection = ToolSelection(tools=options.tools, toolsets=options.toolsets)
    unknown = selection.unmatched(infos)
    if unknown:
        raise ValueError(f"no enabled plugin offers {', '.join(unknown)} (toolsets: "
                         f"{', '.join(sorted({info.toolset for info in infos})) or 'none'})")
    return selection.names(infos), {info.name: info.toolset for info in infos}


def run_item(item: Item, models: Models, options: BatchOptions, names: frozenset[str] | None,
              toolsets: dict[str, str], store: SessionStore) -> dict[str, Any]:
    """One item through the agent in a fresh session: its trajectory row."""
    started, clock = _now(), time.monotonic()
    session_id = f"batch-{uuid.uuid4().hex[:12]}"
    with Agent(models.get(item.model), session_id=session_id, max_iterations=item.max_turns, platform="batch",
               system_prompt=item.system, memory=options.memory, tools=names, store=store,
               prompt_files=options.prompt_files and item.prompt_files) as agent:
        prompt = agent.manager.skill_library(agent.platform).invoke(item.skills, item.prompt) if item.skills \
            else item.prompt
        result = agent.ask(prompt)
        messages = [agent.system_message(), *agent.messages]
        schemas = agent.tool_schemas()
        model = agent.model
    stats = tool_stats(messages, [s["function"]["name"] for s in schemas])
    return {
        "id": item.id, "prompt": item.prompt, "completed": result.stopped is None,
        "partial": result.stopped is not None, "error": None,
        "messages": messages, "conversations": sharegpt(messages, schemas),
        "tool_stats": stats, "tool_error_counts": {name: counts["failure"] for name, counts in stats.items()},
        "toolsets_used": sorted({toolsets.get(name, "") for name, counts in stats.items() if counts["count"]} - {""}),
        "api_calls": result.model_calls,
        "usage": {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens},
        "cost_usd": result.cost, "model": model,
        "timings": {"started": started, "finished": _now(), "seconds": round(time.monotonic() - clock, 3)},
        "metadata": {"line": item.line, "session_id": session_id},
    }


Outcome = tuple[Item, "dict[str, Any] | None", "str | None"]  # an item, and its row or its error


class Threads:
    """Items run on `size` daemon threads of this process (`run(item)` gives its row)."""

    def __init__(self, run: Callable[[Item], dict[str, Any]], size: int, close: Callable[[], None] = lambda: None) -> None:
        self.capacity = max(1, size)
        self._tasks: queue.Queue[Item | None] = queue.Queue()
        self._results: queue.Queue[Outcome] = queue.Queue()
        self._run, self._close = run, close
        self._threads = [threading.Thread(target=self._work, name=f"batch-{i}", daemon=True)
                         for i in range(self.capacity)]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while (item := self._tasks.get()) is not None:
            try:
                self._results.put((item, self._run(item), None))
            except BaseException as exc:  # noqa: BLE001 - an item's failure is its row in failures.jsonl
                self._results.put((item, None, f"{type(exc).__name__}: {exc}"))

    def submit(self, item: Item) -> None:
        self._tasks.put(item)

    def wait(self, timeout: float) -> list[Outcome]:
        """The items finished within `timeout` seconds (at least one, unless none finished)."""
        try:
            done = [self._results.get(timeout=timeout)]
        except queue.Empty:
            return []
        while not self._results.empty():
            done.append(self._results.get_nowait())
        return done

    def close(self) -> None:
        for _ in self._threads:  # running items are not waited for: the threads are daemons
            self._tasks.put(None)
        self._close()



class Executor(Protocol):
    """Where items run: `capacity` at once, `submit` one, `wait` for finished ones, `close`."""

    capacity: int

    def submit(self, item: Item) -> None: ...
    def wait(self, timeout: float) -> list[Outcome]: ...
    def close(self) -> None: ...


def item_trace(item: Item, batch: dict[str, str] | None) -> Any:
    """The trace of one item (`batch item <id>`), a trace of its own linked to the batch's span
    (`batch`: its `trace_headers()`, sent along to where the item runs)."""
    return new_trace(f"batch item {item.id}", batch, **{"hermes.batch.item": str(item.id)})


def local_executor(manager: PluginManager, out: OutputDir, options: BatchOptions, size: int) -> Threads:
    """`size` threads of this process running items with `manager`'s plugins, sessions kept in `out`."""
    names, toolsets = offered_tools(manager, options)
    models = Models(manager)
    stores: dict[int, SessionStore] = {}  # a connection per thread

    batch = trace_headers()  # made under the batch's span (`run_batch`): each item's trace links to it

    def run(item: Item) -> dict[str, Any]:
        store = stores.get(threading.get_ident())
        if store is None:
            store = stores[threading.get_ident()] = SessionStore(out.path)
        with item_trace(item, batch):
            return run_item(item, models, options, names, toolsets, store)

    def close() -> None:
        for store in list(stores.values()):
            store.close()

    import openai  # noqa: F401 - the SDK, imported once here rather than by every thread at its first call at once
    return Threads(run, size, close)


def run_batch(
    manager: PluginManager, items: list[Item], out: OutputDir, options: BatchOptions = BatchOptions(), *,
    progress: Callable[[Statistics], None] = lambda stats: None, stop: threading.Event | None = None,
    abort: threading.Event | None = None, executor: Callable[[int], Executor] | None = None,
) -> Statistics:
    """Run the `items` not finished in `out` yet, `options.concurrency` at once; write each finished
    one as it finishes and the statistics at the end. `progress` hears of every finished item and
    about once a second; `stop` ends the scheduling, `abort` the waiting too. `executor(size)` gives
    where the items run (by default: threads of this process, `local_executor`)."""
    stop, abort = stop or threading.Event(), abort or threading.Event()
    offered_tools(manager.load(), options)  # an unknown toolset or tool: said before anything runs
    stats = Statistics(total=len(items))
    known = {item.id for item in items}
    for earlier in out.rows.values():
        if earlier["id"] in known:
            stats.already += 1
            stats.add(earlier)
    todo = [item for item in items if item.id not in out.rows]
    size = max(1, min(options.concurrency, len(todo)))
    with new_trace("batch run", **{"hermes.batch.folder": str(out.path), "hermes.batch.items": len(todo)}):
        # the executor is made under this span, so that each item's trace links to it
        runner = executor(size) if executor is not None else local_executor(manager, out, options, size)
        pending = iter(todo)
        stats.started = time.monotonic()  # the run's own time, from its first item
        try:
            while True:
                while stats.running < runner.capacity and not stop.is_set() and (item := next(pending, None)) is not None:
                    runner.submit(item)
                    stats.running += 1
                if stats.running == 0 or abort.is_set():
                    break
                finished = runner.wait(1.0)
                for item, row, error in finished:
                    stats.running -= 1
                    if row is not None:
                        out.append(row)
                        stats.add(row)
                        stats.completed += row["completed"]
                        stats.partial += row["partial"]
                    else:
                        stats.failed += 1
                        out.failed({"id": item.id, "line": item.line, "error": error, "at": _now()})
                    if options.max_cost is not None and stats.cost_usd >= options.max_cost and not stop.is_set():
                        stats.stopped = "max_cost"
                        stop.set()
                progress(stats)
        finally:
            runner.close()
            if abort.is_set():
                stats.stopped = "aborted"
            elif stop.is_set() and stats.stopped is None:
                stats.stopped = "interrupted"
            out.write_statistics(stats.to_dict())
    return stats
