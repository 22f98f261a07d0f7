"""Helpers for the tests: real config files, real plugin folders, real installed
distributions, and the `hermes` CLI run as a subprocess."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

HERMES = Path(sys.executable).parent / "hermes"


def write_config(home: Path, text: str) -> Path:
    path = home / "config.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def make_folder_plugin(root: Path, folder: str, code: str, manifest: str | None = "") -> Path:
    """`root/folder/` with `__init__.py` = code and `plugin.yaml` = manifest (None: no manifest)."""
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "__init__.py").write_text(textwrap.dedent(code), encoding="utf-8")
    if manifest is not None:
        (path / "plugin.yaml").write_text(textwrap.dedent(manifest), encoding="utf-8")
    return path


def backdate(folder: Path, seconds: float = 3600) -> Path:
    """Give `folder` and everything in it a modification time `seconds` ago, as an installed plugin
    has (files changed in the last two seconds are not remembered for lazy activation)."""
    then = time.time() - seconds
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (then, then))
    return folder


def install_dist(
    site: Path,
    name: str,
    entry_points: dict[str, str],
    modules: dict[str, str],
    *,
    version: str = "1.0",
    summary: str = "",
    group: str = "hermes_agent.plugins",
    requires: tuple[str, ...] = (),
    more_groups: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Lay out an installed distribution in `site` (a directory on sys.path), as pip does:
    its modules (`pkg/__init__` makes a package), and a dist-info with METADATA (`requires` as
    Requires-Dist), entry_points.txt (`entry_points` in `group`, plus `more_groups`) and RECORD."""
    site.mkdir(parents=True, exist_ok=True)
    for module, code in modules.items():
        path = site / f"{module.replace('.', '/')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code), encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    requirements = "".join(f"Requires-Dist: {r}\n" for r in requires)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n{requirements}\n",
        encoding="utf-8",
    )
    groups = {group: entry_points, **(more_groups or {})}
    text = "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items())
    (info / "entry_points.txt").write_text(text, encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")


def hermes(*args: str, check: int | None = 0, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the `hermes` console script with the current environment (HERMES_HOME, cwd)."""
    result = subprocess.run([str(HERMES), *args], capture_output=True, text=True, input=input, timeout=120)
    if check is not None:
        assert result.returncode == check, (result.returncode, result.stdout, result.stderr)
    return result


def hermes_json(*args: str, check: int | None = 0) -> Any:
    return json.loads(hermes(*args, "--json", check=check).stdout)


ROOT = Path(__file__).resolve().parents[2]


def make_venv(path: Path) -> Path:
    """A new virtual environment at `path` that installs real distributions without the network.

    The venv gets no pip of its own (the running pip installs into it with `--python`), and
    sees the running environment's site-packages *after* its own for the dependencies, so a
    distribution installed into it shadows one of the same name outside.
    """
    import sysconfig
    import venv

    venv.create(path, with_pip=False)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    Path(purelib, "_outer_site.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def one_build_at_a_time() -> Any:
    """Held while pip builds a project folder: one build at a time across test workers
    (setuptools builds in the project's own build/ folder, which two builds at once would tear)."""
    import tempfile

    from hermes_core.hosting import locked

    return locked(Path(tempfile.gettempdir()) / "hermes-core-tests-pip-build")


def pip_install(python: Path, *targets: str | Path) -> None:
    """Build and install `targets` (project folders) into the venv of `python`, no deps, offline."""
    with one_build_at_a_time():
        result = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
             "--no-build-isolation", "--disable-pip-version-check", *map(str, targets)],
            capture_output=True, text=True,
        )
    assert result.returncode == 0, f"pip install {' '.join(map(str, targets))} failed:\n{result.stderr[-3000:]}"


_MANAGERS: list[Any] = []  # a ctx works while its manager does: the helpers' managers live for the run


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def plugin_ctx(home: Path, plugin_id: str = "probe") -> Any:
    """The `ctx` of a plugin `plugin_id` loaded into a fresh manager for `home`."""
    from hermes_core import PluginManager

    manager = PluginManager(home=home, discover_plugins=False).load()
    _MANAGERS.append(manager)
    record = manager.add_plugin(lambda ctx: ctx.register_command(plugin_id, lambda raw: raw), plugin_id)
    assert record.status == "ok", record.failure
    return record.ctx


def llm_config(home: Path, url: str, extra: str = "", *, model: str = "scripted-model") -> Path:
    """A config whose model is the scripted server at `url` (provider `custom`), plus `extra`:
    YAML appended as it is (indent it by two spaces to add keys under `model:`)."""
    text = f"model:\n  provider: custom\n  model: {model}\n  base_url: {url}\n" + extra
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# What an object walk does not enter: code in the host's process can always reach these
# (`sys.modules`, `gc`, `sys._getframe`); what a walk proves is what the host hands a plugin.
OPAQUE = (types.ModuleType, type, types.FrameType, types.TracebackType, types.CodeType, io.IOBase)


def referents(obj: Any) -> Iterator[Any]:
    """What `obj` leads to: attributes, slots, container items, closure cells, bound methods."""
    if isinstance(obj, Mapping):
        for key, value in list(obj.items()):
            yield key
            yield value
    elif isinstance(obj, (list, tuple, set, frozenset)):
        yield from list(obj)
    if isinstance(obj, types.MethodType):
        yield obj.__self__
        yield obj.__func__
    if isinstance(obj, types.FunctionType):
        yield from (cell.cell_contents for cell in obj.__closure__ or () if cell_has_contents(cell))
        yield obj.__defaults__
        yield obj.__kwdefaults__
        return
    if isinstance(obj, BaseException):
        yield from (obj.args, obj.__cause__, obj.__context__)
    yield from getattr(obj, "__dict__", {}).values()
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                yield getattr(obj, name)


def cell_has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def sigint_default() -> None:
    """`preexec_fn` for a child a test sends SIGINT: it takes Ctrl-C as a terminal's foreground
    job does, even when this test run itself was started with SIGINT ignored (`pytest &` in a
    shell without job control hands that on to every child)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


CTRL_C = "\x03"


class Screen:
    """`hermes ARGS…` (`Screen("chat")`) on a pseudo-terminal, its controlling terminal (80×24):
    `type` keys, `expect` text to appear on the screen (what the process wrote, echo included)."""

    def __init__(self, *args: str) -> None:
        import fcntl
        import pty
        import struct
        import termios

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec hermes with this environment, TERM set
            sigint_default()
            os.execve(str(HERMES), [str(HERMES), *args], {**os.environ, "TERM": "xterm"})
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.shown = ""
        self.seen = 0  # where the next `expect` starts looking

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 4096)
        except OSError:  # the child is gone
            return False
        self.shown += data.decode("utf-8", "replace")
        return bool(data)

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Wait until `text` is on the screen after what earlier expects consumed; returns what
        came before it."""
        import time

        deadline = time.monotonic() + timeout
        while text not in self.shown[self.seen:]:
            assert time.monotonic() < deadline, f"{text!r} never shown; the screen:\n{self.shown}"
            if not self._read(0.5) and self.exited():
                raise AssertionError(f"hermes exited before showing {text!r}; the screen:\n{self.shown}")
        at = self.shown.index(text, self.seen)
        before, self.seen = self.shown[self.seen:at], at + len(text)
        return before

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def interrupt(self, tries: int = 10) -> None:
        """Ctrl-C at the prompt, until the prompt's line ends. Python's readline loop misses a
        SIGINT that lands between handling one key and waiting for the next (it waits on until
        another signal), so a Ctrl-C that changes nothing is pressed again, as a person would."""
        for _ in range(tries):
            self.type(CTRL_C)
            for _ in range(10):  # up to 5 s for the line to end before pressing again
                if "\n" in self.shown[self.seen:]:
                    break
                self._read(0.5)
            if "\n" in self.shown[self.seen:]:
                return
        raise AssertionError(f"Ctrl-C never ended the prompt's line; the screen:\n{self.shown}")

    def exited(self) -> bool:
        return os.waitpid(self.pid, os.WNOHANG)[0] != 0 if self.pid else True

    def finish(self, timeout: float = 60.0) -> str:
        """Read to the end; the whole screen."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._read(0.5):
                try:
                    pid, _ = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid:
                    self.pid = 0
                    while self._read(0.1):
                        pass
                    break
        return self.shown

    def close(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)
