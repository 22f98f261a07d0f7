"""`hermes batch run DATASET.jsonl --out DIR`: a dataset of prompts through the agent, trajectories kept."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from ._common import manager

__all__ = ["batch"]

_EVERY = 10.0  # seconds between progress lines when stderr is no terminal (or another tenth of the items done)


@click.group()
def batch() -> None:
    """Run a dataset of prompts through the agent and keep what happened (docs/batch.md)."""


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _line(stats: Any) -> str:
    eta = f", ETA {stats.remaining / stats.rate:.0f} s" if stats.rate > 0 and stats.remaining else ""
    return (f"{stats.already + stats.done}/{stats.total} done, {stats.failed} failed, {stats.rate:.1f} items/s{eta}, "
            f"{stats.input_tokens + stats.output_tokens:,} tokens, ${stats.cost_usd:.4f}")


class _Progress:
    """A bar on a terminal (click's), else a plain line for every tenth of the items and every few
    seconds, on stderr."""

    def __init__(self, todo: int) -> None:
        self._bar: Any = None
        self._shown = 0
        self._last = time.monotonic()
        self._step = max(1, todo // 10)
        if sys.stderr.isatty() and todo:
            self._bar = click.progressbar(length=todo, file=sys.stderr, show_eta=True, label="batch",
                                          item_show_func=lambda line: line)
            self._bar.__enter__()

    def __call__(self, stats: Any) -> None:
        if self._bar is not None:
            finished = stats.done + stats.failed
            self._bar.update(finished - self._shown, _line(stats))
            self._shown = finished
            return
        finished = stats.done + stats.failed
        if finished // self._step > self._shown // self._step or time.monotonic() - self._last >= _EVERY:
            self._last, self._shown = time.monotonic(), finished
            click.echo(f"batch: {_line(stats)}", err=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


@batch.command("run")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The folder of trajectories.jsonl, failures.jsonl and statistics.json.")
@click.option("--concurrency", "-c", type=click.IntRange(1, 1024), default=4, show_default=True,
              help="Items run at once.")
@click.option("--resume", is_flag=True,
              help="Go on where a run on --out ended (a run on a folder with finished items always does).")
@click.option("--memory", is_flag=True, help="Give each item's session the memory provider (off by default).")
@click.option("--no-prompt-files", "prompt_files", is_flag=True, flag_value=False, default=True,
              help="No SOUL.md, project context or memory file in any item's system prompt.")
@click.option("--toolsets", default="", help="Offer only the tools of these toolsets (comma-separated).")
@click.option("--tools", default="", help="Offer only these tools (comma-separated; with --toolsets: either).")
@click.option("--max-cost", type=click.FloatRange(min=0), help="Start no new item once the batch has spent this (USD).")
@click.option("--ray", "ray_address", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
              help="Run the items on a Ray cluster: ADDRESS, else RAY_ADDRESS, else a local one "
                   "(pip install 'hermes-core[ray]'; docs/batch.md).")
@click.pass_context
def run(ctx: click.Context, dataset: Path, out_dir: Path, concurrency: int, resume: bool, memory: bool,
        prompt_files: bool, toolsets: str, tools: str, max_cost: float | None, ray_address: str | None) -> None:
    """Run every item of DATASET (JSONL: {"prompt": ..., "id"?, "system"?, "max_turns"?, "model"?, "prompt_files"?} a
    line) through the agent in a fresh session each, and append its trajectory to --out as it
    finishes. Running it again on the same --out runs what is not finished yet."""
    from ..batch import BatchOptions, OutputDir, read_dataset, run_batch
    from ..hosting import until_signal

    items, problems = read_dataset(dataset)
    for problem in problems:
        click.echo(f"hermes: warning: {dataset.name} {problem}", err=True)
    options = BatchOptions(concurrency, memory, _names(toolsets), _names(tools), max_cost, prompt_files)
    executor = None
    if ray_address is not None:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise click.UsageError("--ray needs Ray, which is not installed: pip install 'hermes-core[ray]'")

        def executor(size: int) -> Any:
            from ..batch.cluster import RayExecutor

            return RayExecutor(ray_address or None, host, options, size)
    host = manager(ctx)
    with OutputDir(out_dir) as out:
        if out.torn:
            click.echo("hermes: warning: the last line of trajectories.jsonl was cut off by a run that was stopped; "
                       "that item runs again", err=True)
        for problem in out.problems:
            click.echo(f"hermes: warning: {problem}", err=True)
        todo = sum(1 for item in items if item.id not in out.rows)
        click.echo(f"batch: {len(items)} items, {len(items) - todo} already finished, {todo} to run, "
                   f"{concurrency} at once", err=True)
        stop, abort = threading.Event(), threading.Event()

        def stopping() -> None:
            stop.set()
            click.echo("\nbatch: stopping: no new items; the running ones finish (Ctrl-C again: stop now)", err=True)

        progress = _Progress(todo)
        try:
            with until_signal(stopping, abort.set, signals=(signal.SIGINT,)):
                stats = run_batch(host, items, out, options, progress=progress, stop=stop, abort=abort,
                                  executor=executor)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        finally:
            progress.close()
    click.echo(f"{stats.done} finished ({stats.completed} completed, {stats.partial} partial), {stats.failed} failed; "
               f"{stats.already + stats.done}/{stats.total} in {out_dir / 'trajectories.jsonl'}; "
               f"{stats.rate:.1f} items/s; ${stats.cost_usd:.4f} in all")
    if stats.stopped == "max_cost":
        click.echo(f"batch: stopped starting items: the batch has spent ${stats.cost_usd:.4f}, --max-cost "
                   f"${max_cost}; the same command goes on", err=True)
    elif stats.stopped is not None:
        click.echo("batch: stopped; the same command goes on where it ended", err=True)
        ctx.exit(130)
    if stats.failed:
        click.echo(f"batch: {stats.failed} item(s) failed (failures.jsonl); the same command runs them again", err=True)
        ctx.exit(1)
