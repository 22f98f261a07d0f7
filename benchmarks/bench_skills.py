"""`hermes run` with 200 installed skills against the same run with none: what the skills add to start-up.

    .venv/bin/python benchmarks/bench_skills.py [--runs 21] [--skills 200]

Two homes, alike but for `$HERMES_HOME/skills/`: one empty, one with `--skills` skills in 20
category folders (each a SKILL.md with a frontmatter and a 4 KB body, and a `references/` file).
Each run is a fresh `hermes run hi` process against the scripted model server (its own process),
answered at once with text; the two homes alternate, and each pair's difference is one sample.
A warm-up run of each home first (the skills' frontmatter is then remembered in
`.cache/skills.json`, as after any earlier run); `--cold` removes that cache before every run to
measure a first start after the skills changed. Prints the paired medians, their difference and
ratio. Target (issue 47): 200 skills add at most 50 ms.

Then, in this process, what the agent's start does for the skills alone: the home's tree scanned
and the index text built (`SkillLibrary(...).index_prompt()`), with the frontmatter remembered
(warm) and without (cold: every SKILL.md's frontmatter read and parsed).
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
BODY = "## Steps\n" + "".join(f"{i}. Do the thing carefully and check the result before going on.\n"
                              for i in range(60))


def make_home(root: Path, url: str, skills: int) -> Path:
    home = root
    home.mkdir()
    (home / "config.yaml").write_text(f"model:\n  provider: custom\n  model: bench\n  base_url: {url}\n")
    for n in range(skills):
        folder = home / "skills" / f"category-{n % 20}" / f"skill-{n:03d}"
        (folder / "references").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{n:03d}\ndescription: Skill number {n}, for tasks of kind {n % 7} in area {n % 20}\n"
            f"tags: [bench, area-{n % 20}]\n---\n# Skill {n}\n{BODY}", encoding="utf-8")
        (folder / "references" / "notes.md").write_text("notes\n" * 50, encoding="utf-8")
    hour_ago = time.time() - 3600  # an operator's files are not seconds old
    for path in [home, *home.rglob("*")]:
        os.utime(path, (hour_ago, hour_ago))
    return home


def run(home: Path, cold: bool) -> float:
    if cold:
        (home / ".cache" / "skills.json").unlink(missing_ok=True)
    env = {**os.environ, "HERMES_HOME": str(home)}
    started = time.perf_counter()
    done = subprocess.run([HERMES, "run", "hi"], env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or done.stdout.strip() != "pong":
        raise SystemExit(f"hermes run failed ({done.returncode}): {done.stdout!r} {done.stderr[-500:]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--cold", action="store_true", help="no remembered frontmatter: every run parses it")
    args = parser.parse_args()
    with server_process(0.0) as url, tempfile.TemporaryDirectory() as tmp:
        empty = make_home(Path(tmp) / "none", url, 0)
        full = make_home(Path(tmp) / "many", url, args.skills)
        for home in (empty, full):
            run(home, args.cold)
        none_times, many_times = [], []
        for _ in range(args.runs):
            none_times.append(run(empty, args.cold))
            many_times.append(run(full, args.cold))
        warm, cold = in_process(full)
    added = [m - n for n, m in zip(none_times, many_times)]
    none_median, many_median = statistics.median(none_times), statistics.median(many_times)
    print(f"hermes run, {args.runs} pairs{' (cold: no remembered frontmatter)' if args.cold else ''}:")
    print(f"  0 skills:   median {none_median * 1000:7.1f} ms")
    print(f"  {args.skills} skills: median {many_median * 1000:7.1f} ms")
    print(f"  added: median of paired differences {statistics.median(added) * 1000:+.1f} ms "
          f"(ratio {many_median / none_median:.3f}); target <= +50 ms")
    print(f"in process, the tree scanned and the index built for {args.skills} skills: "
          f"warm {warm * 1000:.1f} ms, cold {cold * 1000:.1f} ms (medians of 15)")


def in_process(home: Path) -> tuple[float, float]:
    from hermes_core import SkillLibrary, load_config

    config = load_config(home)
    cache = home / ".cache" / "skills.json"
    SkillLibrary(home, config).index_prompt()  # ruamel imported, the cache written

    def once(cold: bool) -> float:
        if cold:
            cache.unlink(missing_ok=True)
        started = time.perf_counter()
        text = SkillLibrary(home, config).index_prompt({"skill_view"})
        elapsed = time.perf_counter() - started
        assert "<available_skills>" in text
        return elapsed

    warm = statistics.median(once(False) for _ in range(15))
    cold = statistics.median(once(True) for _ in range(15))
    return warm, cold


if __name__ == "__main__":
    main()
