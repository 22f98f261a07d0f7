"""What the servers the tests start (PostgreSQL, nginx) share: the rule for a server that is not
installed, a temporary folder its own user can reach, and a child that dies with the test process."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

if sys.platform == "linux":
    import ctypes

    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up before any fork
    _PR_SET_PDEATHSIG = 1


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def unavailable(reason: str, install: str) -> NoReturn:
    """A server the test needs is not there: under CI=true the test fails (CI installs it), elsewhere
    it is skipped with the one command that installs it."""
    if in_ci():
        pytest.fail(f"{reason}, and CI=true: the CI machine must have it (`{install}`)", pytrace=False)
    pytest.skip(f"{reason}: install it with `{install}`")


def server_folder(prefix: str, owner: tuple[int, int] | None = None) -> Path:
    """A fresh folder in the system's temporary directory (short, for unix socket paths, and outside
    pytest's 0700 folders so another user can reach it), owned by `owner` (uid, gid) when given."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    if owner is not None:
        os.chown(folder, *owner)
    return folder


def dies_with_parent(sig: int) -> Callable[[], None] | None:
    """A `preexec_fn` that sends the child `sig` when this test process dies, so a killed test run
    leaves no server behind (Linux). Only from the main thread: the signal follows the thread that
    started the child, and a test's own thread ends long before the session."""
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()

    def preexec() -> None:
        _PRCTL(_PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # it died before the line above
            os.kill(os.getpid(), sig)

    return preexec

