"""A temporary venv with hermes-core really installed and N entry-point plugins beside it."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import make_venv, pip_install  # noqa: E402


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds one whole process of `cmd` takes (its output thrown away)."""
    started = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def site_packages(python: Path) -> Path:
    lib = python.parent.parent / "lib"
    return next(lib.glob("python3*/site-packages"))


def add_plugins(python: Path, count: int) -> list[str]:
    """Install `count` plugin distributions the way pip lays them out (module + dist-info)."""
    site = site_packages(python)
    ids = []
    for i in range(count):
        pid = f"bench{i:03d}"
        (site / f"hermes_bench_{i:03d}.py").write_text(
            "import json\n\ndef register(ctx):\n"
            f"    ctx.register_tool({pid!r}, 'bench', {{'name': {pid!r}}}, lambda args, **kw: json.dumps(args))\n"
        )
        info = site / f"hermes_bench_plugin_{i:03d}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: hermes-bench-plugin-{i:03d}\nVersion: 1.0\n"
            f"Summary: Benchmark plugin {i}\n\n"
        )
        (info / "entry_points.txt").write_text(f"[hermes_agent.plugins]\n{pid} = hermes_bench_{i:03d}\n")
        (info / "RECORD").write_text("")
        (info / "INSTALLER").write_text("pip\n")
        ids.append(pid)
    return ids


def bench_venv(path: Path, plugins: int) -> tuple[Path, list[str]]:
    python = make_venv(path)
    pip_install(python, ROOT)
    return python, add_plugins(python, plugins)


__all__ = ["bench_venv", "site_packages", "sysconfig", "timed"]
