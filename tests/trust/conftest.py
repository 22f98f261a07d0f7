"""The trust tests' environment: a folder of real wheels pip installs from with no index (no
network), a fresh virtual environment per test, and `hermes` run there as a subprocess."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT, Screen, make_venv
from tests.trust.index import Index, serve_index

Hermes = Callable[..., subprocess.CompletedProcess[str]]


def pip_env(wheelhouse: Path) -> dict[str, str]:
    """pip offline: no config file (the machine's indexes and constraints), no index, our wheels only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return env | {"PYTHONPATH": str(ROOT), "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1",
                  "PIP_FIND_LINKS": str(wheelhouse), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    folder = tmp_path / "wheelhouse"
    folder.mkdir()
    return folder


@pytest.fixture
def python(tmp_path: Path) -> Path:
    return make_venv(tmp_path / "env")


@pytest.fixture
def hermes_env(home: Path, python: Path, wheelhouse: Path) -> Hermes:
    """`hermes ARGS` run by the test's venv (hermes-core from this checkout), pip offline."""

    def run(*args: str, check: int | None = 0, input: str | None = None, interpreter: Path | None = None,
            **env: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([str(interpreter or python), "-c", "from hermes_core.cli import main; main()", *args],
                                capture_output=True, text=True, input=input, timeout=300,
                                env=pip_env(wheelhouse) | env, stdin=None if input is not None else subprocess.DEVNULL)
        if check is not None:
            assert result.returncode == check, (result.returncode, result.stdout, result.stderr)
        return result

    return run


def site_packages(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture
def hermes_pty(home: Path, python: Path, wheelhouse: Path) -> Iterator[Callable[..., Screen]]:
    """`hermes ARGS` on a pseudo-terminal (its stdin a terminal, as a person's), in the test's venv, pip offline."""
    screens: list[Screen] = []

    def start(*args: str) -> Screen:
        screen = _PtyScreen([str(python), "-c", "from hermes_core.cli import main; main()", *args],
                            pip_env(wheelhouse) | {"HERMES_HOME": str(home)})
        screens.append(screen)
        return screen

    yield start
    for screen in screens:
        screen.close()


class _PtyScreen(Screen):
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        import pty

        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(argv[0], argv, env | {"TERM": "xterm"})
        self.shown = ""
        self.seen = 0


@pytest.fixture
def index() -> Iterator[Index]:
    """A package index on loopback (tests/trust/index.py)."""
    with serve_index() as served:
        yield served


def from_index(index: Index) -> dict[str, str]:
    """pip on the loopback `index`; anything else on the network unreachable (an HTTP proxy that
    refuses), so that a vulnerability service cannot be reached either."""
    return {"PIP_NO_INDEX": "false", "PIP_INDEX_URL": index.url, "HTTPS_PROXY": UNREACHABLE,
            "HTTP_PROXY": UNREACHABLE, "NO_PROXY": "127.0.0.1,localhost"}


UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused
