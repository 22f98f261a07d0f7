"""`hermes serve` against the model server behind it: what the API server adds to a request.

    .venv/bin/python benchmarks/bench_api_server.py [--requests 200] [--concurrent 100]

The scripted model server runs in its own process and answers at once; `hermes serve` runs in
another, pointed at it. In the same run, request by request in turn:

- **added latency, openai SDK**: a non-streamed chat completion through `hermes serve` against the
  same request sent straight to the model server, each with the stock `openai` client most users
  have (it keeps its connection open between requests): p50 and p90 of each and of the difference;
- **added latency, urllib**: the same with `urllib`, which opens a new connection per request;
- **first byte**: a streamed chat completion's first content chunk through `hermes serve` against
  the model server's own first chunk for the same request (p50 of each and of the difference);
- **concurrency**: `--concurrent` streamed requests at once (max_concurrent_runs raised to match),
  each asking for its own token back: every one must get its whole answer, its own token and no
  other's. Reported: how many did, and the wall time.

Targets (issues 42, 54): added latency <= 5 ms p50 with either client, first byte <= 20 ms after the
model's, 100 of 100.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from _scripted import server_process

HERMES = str(Path(sys.executable).with_name("hermes"))


def post(url: str, body: dict, *, first_chunk: bool = False) -> tuple[float, bytes]:
    """Seconds until the whole answer (or, with `first_chunk`, the first content chunk), and the body read."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        if not first_chunk:
            data = response.read()
            return time.perf_counter() - started, data
        read = b""
        for line in response:
            read += line
            if b'"content":"' in line and b'"content":""' not in line:
                return time.perf_counter() - started, read
        return time.perf_counter() - started, read


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * share), len(ordered) - 1)]


def sdk_rounds(url: str, model: str, requests: int) -> tuple[list[float], list[float]]:
    """Seconds per non-streamed request with the stock openai client, through `url` and straight to
    `model` in turn, each client on its one kept-alive connection (after a warm-up)."""
    import openai

    through_client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
    direct_client = openai.OpenAI(base_url=model, api_key="unused", max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    through, direct = [], []
    for index in range(requests + 10):
        started = time.perf_counter()
        through_client.chat.completions.create(model="hermes-agent", messages=messages)  # type: ignore[arg-type]
        middle = time.perf_counter()
        direct_client.chat.completions.create(model="bench", messages=messages)  # type: ignore[arg-type]
        if index >= 10:
            through.append(middle - started)
            direct.append(time.perf_counter() - middle)
    return through, direct


def serve(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([HERMES, "serve", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    match = re.match(r"(http://\S+/v1) ", first)
    assert match, first
    return proc, match.group(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrent", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, server_process(0.0, "echo", echo=True) as model:
        home = Path(tmp) / "home"
        home.mkdir()
        (home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  model: bench\n  base_url: {model}\n"
            f"api_server:\n  max_concurrent_runs: {args.concurrent}\n", encoding="utf-8")
        old = time.time() - 3600  # an installed config: a file written in the last seconds is read again each time
        os.utime(home / "config.yaml", (old, old))
        env = {**os.environ, "HERMES_HOME": str(home)}
        proc, url = serve(env)
        try:
            ask = {"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]}
            direct_body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}]}
            for _ in range(10):  # warm both up
                post(f"{url}/chat/completions", ask)
                post(f"{model}/chat/completions", direct_body)
            through, direct = [], []
            for _ in range(args.requests):
                through.append(post(f"{url}/chat/completions", ask)[0])
                direct.append(post(f"{model}/chat/completions", direct_body)[0])
            added = [a - b for a, b in zip(through, direct)]
            sdk_through, sdk_direct = sdk_rounds(url, model, args.requests)
            sdk_added = [a - b for a, b in zip(sdk_through, sdk_direct)]
            first_through, first_direct = [], []
            for _ in range(args.requests // 2):
                first_through.append(post(f"{url}/chat/completions", {**ask, "stream": True}, first_chunk=True)[0])
                first_direct.append(post(f"{model}/chat/completions", {**direct_body, "stream": True},
                                         first_chunk=True)[0])
            first_added = [a - b for a, b in zip(first_through, first_direct)]

            results: dict[int, str] = {}

            def one(index: int) -> None:
                body = {**ask, "stream": True, "messages": [{"role": "user", "content": f"token{index}x"}]}
                _, data = post(f"{url}/chat/completions", body)
                text = "".join(json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                               for line in data.decode().splitlines()
                               if line.startswith("data: {") and '"choices":[{' in line)
                results[index] = text

            started = time.perf_counter()
            threads = [threading.Thread(target=one, args=(i,)) for i in range(args.concurrent)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - started
            whole = sum(1 for i, text in results.items()
                        if f"token{i}x" in text and text.startswith("echo ") and
                        not any(f"token{j}x" in text for j in range(args.concurrent) if j != i))
        finally:
            proc.terminate()
            proc.wait(30)
    ms = 1000.0
    print(f"non-streamed, openai SDK (one kept-alive connection each), {args.requests} requests: through hermes serve "
          f"p50 {statistics.median(sdk_through) * ms:.2f} ms (p90 {percentile(sdk_through, 0.9) * ms:.2f}), straight to "
          f"the model p50 {statistics.median(sdk_direct) * ms:.2f} ms (p90 {percentile(sdk_direct, 0.9) * ms:.2f}); "
          f"added p50 {statistics.median(sdk_added) * ms:.2f} ms, p90 {percentile(sdk_added, 0.9) * ms:.2f} ms")
    print(f"non-streamed, urllib (a new connection each), {args.requests} requests: through hermes serve p50 {statistics.median(through) * ms:.2f} ms "
          f"(p90 {percentile(through, 0.9) * ms:.2f}), straight to the model p50 {statistics.median(direct) * ms:.2f} ms "
          f"(p90 {percentile(direct, 0.9) * ms:.2f}); added p50 {statistics.median(added) * ms:.2f} ms, "
          f"p90 {percentile(added, 0.9) * ms:.2f} ms")
    print(f"streamed, first content chunk, {len(first_added)} requests: through p50 "
          f"{statistics.median(first_through) * ms:.2f} ms, straight p50 {statistics.median(first_direct) * ms:.2f} ms; "
          f"added p50 {statistics.median(first_added) * ms:.2f} ms")
    print(f"{args.concurrent} concurrent streamed requests: {whole} of {args.concurrent} got their whole own answer "
          f"in {wall:.2f} s")


if __name__ == "__main__":
    main()
