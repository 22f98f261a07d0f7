"""`hermes run` in a deep folder tree with every prompt file present, against the same tree with none.

    .venv/bin/python benchmarks/bench_prompt_files.py [--runs 21] [--depth 12]

Two setups, alike but for the files: a git repository whose working folder is `--depth` folders
below its root, and a home. With every file: SOUL.md, memories/MEMORY.md and memories/USER.md in
the home; an AGENTS.md of about 4 KB in every folder from the root down to the working folder
(the chain Hermes composes); CLAUDE.md and `.cursorrules` in the working folder (found, not read:
the AGENTS.md chain comes first); no `.hermes.md`, so its walk up to the root finds nothing (the
longest walk). With none: the same folders, empty. Each run is a fresh `hermes run hi` process in
the working folder against the scripted model server (its own process), answered at once; the
two setups alternate, and each pair's difference is one sample. Prints the paired medians, their
difference and ratio. Target (issue 58): the files add at most 10 ms (p50).

Then, in this process, what the agent's start does for the files alone: `read_prompt_files` for
each setup (medians of 51), as a fresh process does it (nothing remembered: what `hermes run`
pays) and as a long-lived one does for its next new conversation (the files unchanged,
remembered by `agent/prompt_cache.py`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _scripted import server_process

HERMES = str(Path(sys.executable).with_name("hermes"))
RULES = "".join(f"- Rule {i}: keep the handlers small, test what you change, and name things plainly.\n"
                for i in range(50))  # about 4 KB


def make_setup(root: Path, url: str, depth: int, files: bool) -> tuple[Path, Path]:
    """(home, working folder) of one setup under `root`."""
    home = root / "home"
    (home / "memories").mkdir(parents=True)
    (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n")
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    folders = [repo]
    for level in range(depth):
        folders.append(folders[-1] / f"level-{level}")
    cwd = folders[-1]
    cwd.mkdir(parents=True)
    if files:
        (home / "SOUL.md").write_text("You are Quill, a careful and terse reviewer.\n" * 20, encoding="utf-8")
        (home / "memories" / "MEMORY.md").write_text("The CI runs on Fridays.\n§\nDeploys need a review.\n")
        (home / "memories" / "USER.md").write_text("The user is called Ada.\n§\nAda prefers short answers.\n")
        for n, folder in enumerate(folders):
            (folder / "AGENTS.md").write_text(f"# Folder {n}\n{RULES}", encoding="utf-8")
        (cwd / "CLAUDE.md").write_text(RULES, encoding="utf-8")
        (cwd / ".cursorrules").write_text(RULES, encoding="utf-8")
    return home, cwd


def run(home: Path, cwd: Path) -> float:
    env = {**os.environ, "HERMES_HOME": str(home)}
    started = time.perf_counter()
    done = subprocess.run([HERMES, "run", "hi"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or done.stdout.strip() != "pong":
        raise SystemExit(f"hermes run failed ({done.returncode}): {done.stdout!r} {done.stderr[-500:]!r}")
    return elapsed


def in_process(home: Path, cwd: Path) -> tuple[float, float, int]:
    """(fresh, remembered, characters): the medians of 51 reads as a new process makes them and
    as a long-lived one makes them again, and how much of the files the prompt holds."""
    import logging

    from hermes_core.agent import prompt_files

    logging.getLogger("hermes_core").addHandler(logging.NullHandler())  # the cut chain's warning, made, not printed
    settled = time.time() - 60  # written long ago: remembered by a long-lived process
    for path in home.rglob("*.md"):
        os.utime(path, (settled, settled))
    for path in cwd.parents[0].rglob("*"):
        if path.is_file():
            os.utime(path, (settled, settled))

    def once(fresh: bool) -> float:
        if fresh:
            prompt_files._TEXTS.clear()
            prompt_files._MADE.clear()
        started = time.perf_counter()
        prompt_files.read_prompt_files(home, cwd, max_chars=30_720)
        return time.perf_counter() - started

    found = prompt_files.read_prompt_files(home, cwd, max_chars=30_720)
    chars = sum(len(p.text) for p in (*([found.soul] if found.soul else []), *found.project, *found.memory))
    fresh = statistics.median(once(True) for _ in range(51))
    return fresh, statistics.median(once(False) for _ in range(51)), chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--depth", type=int, default=12)
    args = parser.parse_args()
    with server_process(0.0) as url, tempfile.TemporaryDirectory() as tmp:
        bare = make_setup(Path(tmp) / "none", url, args.depth, files=False)
        full = make_setup(Path(tmp) / "all", url, args.depth, files=True)
        for setup in (bare, full):
            run(*setup)
        none_times, all_times = [], []
        for _ in range(args.runs):
            none_times.append(run(*bare))
            all_times.append(run(*full))
        (bare_read, bare_kept, _), (full_read, full_kept, chars) = in_process(*bare), in_process(*full)
    added = [a - n for n, a in zip(none_times, all_times)]
    none_median, all_median = statistics.median(none_times), statistics.median(all_times)
    print(f"hermes run {args.depth} folders below the git root, {args.runs} pairs:")
    print(f"  no prompt files:    median {none_median * 1000:7.1f} ms, fastest {min(none_times) * 1000:7.1f} ms")
    print(f"  every prompt file:  median {all_median * 1000:7.1f} ms, fastest {min(all_times) * 1000:7.1f} ms "
          f"({chars:,} characters of files in the prompt)")
    print(f"  added: median of paired differences {statistics.median(added) * 1000:+.1f} ms "
          f"(ratio {all_median / none_median:.3f}), fastest against fastest "
          f"{(min(all_times) - min(none_times)) * 1000:+.1f} ms; target <= +10 ms")
    print(f"in process, read_prompt_files as a new process: none {bare_read * 1000:.2f} ms, every file "
          f"{full_read * 1000:.2f} ms; remembered: none {bare_kept * 1000:.2f} ms, every file {full_kept * 1000:.2f} ms "
          "(medians of 51)")


if __name__ == "__main__":
    main()
