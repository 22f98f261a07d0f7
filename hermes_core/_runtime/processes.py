"""A child process and everything it started, stopped together.

A child started with `start_new_session=True` leads a process group of its own; `kill_group`
kills that whole group, so the grandchildren a plugin or a run started (holding our stdout and
stderr open) die with it instead of living on.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

__all__ = ["kill_group"]


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """Kill `proc`'s process group (when it leads one; else `proc` alone) and reap `proc`."""
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.poll() is None:
            proc.kill()
    except (ProcessLookupError, PermissionError):  # the group is gone (or was never ours)
        if proc.poll() is None:
            proc.kill()
    proc.wait()
