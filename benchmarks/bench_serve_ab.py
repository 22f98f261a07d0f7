"""Two `hermes serve`, each on its own checkout of hermes-core, taking the openai SDK's requests in turn:
what each adds to a request, and the CPU each spends on one, in the same minutes (issue 54).

    .venv/bin/python benchmarks/bench_serve_ab.py CHECKOUT_A CHECKOUT_B [--requests 400] [--runs 3]

A checkout is a folder with `hermes_core/` in it (a worktree, or `git archive REV | tar -x -C DIR`);
each server runs this virtualenv's `hermes` with `PYTHONPATH` at its checkout, in a home of its own,
against one scripted model server (its own process, answering at once). Each round sends one
non-streamed chat completion through A, one straight to the model, one through B, one straight to
the model, with the stock `openai` client (one kept-alive connection each); a run is `--requests`
rounds after a warm-up, and runs alternate which server goes first. Reported per run and server: the
p50 of (through − straight), and the server process's user and system CPU per request (from
/proc/PID/stat). The machine's day moves both servers alike, so compare A with B within a run.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _scripted import server_process

HERMES = str(Path(sys.executable).with_name("hermes"))


def cpu_seconds(pid: int) -> tuple[float, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def run(checkouts: list[str], model: str, requests: int, folder: Path) -> list[tuple[float, float, float]]:
    """(added p50 ms, user ms, sys ms) a request for each of `checkouts`, in the order given."""
    import openai

    servers, clients = [], []
    try:
        for index, checkout in enumerate(checkouts):
            home = folder / f"home{index}"
            home.mkdir()
            (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {model}\n",
                                              encoding="utf-8")
            env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(Path(checkout).resolve())}
            server = subprocess.Popen([HERMES, "serve", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
            servers.append(server)
            assert server.stderr is not None
            found = re.match(r"(http://\S+/v1) ", server.stderr.readline())
            if found is None:
                raise SystemExit(f"hermes serve on {checkout} did not say where it listens")
            clients.append(openai.OpenAI(base_url=found[1], api_key="unused", max_retries=0))
        straight = openai.OpenAI(base_url=model, api_key="unused", max_retries=0)
        messages = [{"role": "user", "content": "hi"}]
        for client in clients:
            for _ in range(30):
                client.chat.completions.create(model="hermes-agent", messages=messages)  # type: ignore[arg-type]
        added: list[list[float]] = [[] for _ in clients]
        before = [cpu_seconds(server.pid) for server in servers]
        for _ in range(requests):
            for index, client in enumerate(clients):
                started = time.perf_counter()
                client.chat.completions.create(model="hermes-agent", messages=messages)  # type: ignore[arg-type]
                middle = time.perf_counter()
                straight.chat.completions.create(model="bench", messages=messages)  # type: ignore[arg-type]
                added[index].append((middle - started) - (time.perf_counter() - middle))
        after = [cpu_seconds(server.pid) for server in servers]
    finally:
        for server in servers:
            server.terminate()
            server.wait()
    return [(statistics.median(added[i]) * 1000, (after[i][0] - before[i][0]) / requests * 1000,
             (after[i][1] - before[i][1]) / requests * 1000) for i in range(len(clients))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    figures: dict[str, list[tuple[float, float, float]]] = {options.a: [], options.b: []}
    with server_process(0.0, "echo", echo=True) as model:
        for number in range(options.runs * 2):
            order = [options.a, options.b] if number % 2 == 0 else [options.b, options.a]
            with tempfile.TemporaryDirectory() as folder:
                results = run(order, model, options.requests, Path(folder))
            for checkout, (added, user, system) in zip(order, results):
                figures[checkout].append((added, user, system))
                print(f"run {number + 1} ({order[0]} first): {checkout}: added p50 {added:.2f} ms, "
                      f"serve CPU {user:.2f} user + {system:.2f} sys ms a request")
    for checkout, rows in figures.items():
        print(f"{checkout}: median added p50 {statistics.median(r[0] for r in rows):.2f} ms, "
              f"median serve CPU {statistics.median(r[1] + r[2] for r in rows):.2f} ms a request")


if __name__ == "__main__":
    main()
