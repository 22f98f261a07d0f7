#!/usr/bin/env python3
"""The project's two commands, needing nothing but Python 3.10+.

    python3 dev.py run     set up .venv, show the plugins, call an example plugin's tool, and run
                           an agent task with it (on a scripted demo model when no endpoint is set)
    python3 dev.py test    set up .venv, then run the test suite (extra arguments go to pytest;
                           --quick leaves out the slow groups: see tests/conftest.py; --fleet runs
                           the fleet group, --browser the browser group and --otel the otel group, which
                           the whole suite leaves to those later runs); as root with apt-get, it first
                           installs the servers and the browser the tests start (PostgreSQL, nginx,
                           Chromium) when they are missing; --otel first installs Arize Phoenix (once)

The virtual environment is (re)installed only when a pyproject.toml changed.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
EXAMPLE = ROOT / "examples" / "hermes-textstats"
EXAMPLES = [EXAMPLE, ROOT / "examples" / "hermes-tldr", ROOT / "examples" / "hermes-paste-to-tasks"]
DEMO_HOME = Path(os.environ.get("HERMES_DEMO_HOME") or ROOT / ".hermes-demo").resolve()
SCRIPTED_HOME = DEMO_HOME / "scripted"
DEMO_MODEL = ROOT / "examples" / "demo_model.py"
INSTALL = ["-e", f"{ROOT}[test]", *[arg for path in EXAMPLES for arg in ("-e", str(path))]]
# setuptools ends every editable install of a project that maps a package to another folder (ours
# ships cookiecutter-plugin/ as hermes_core_template) with an "Editable installation." box that
# asks nothing of anyone; that notice alone is silenced, every other warning stays visible.
PIP_ENV = dict(os.environ, PYTHONWARNINGS=",".join(
    filter(None, [os.environ.get("PYTHONWARNINGS"), "ignore:Editable installation"])))


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def shown(path: Path) -> str:
    """`path` relative to the checkout when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def run(*args: object, **kwargs: object) -> None:
    subprocess.run([str(a) for a in args], check=True, **kwargs)  # type: ignore[call-overload]


def setup() -> None:
    """Create .venv and install hermes-core (with test extras) and the example plugins into it."""
    digest = hashlib.sha256()
    for path in sorted([ROOT / "pyproject.toml", ROOT / "setup.py", *ROOT.glob("examples/*/pyproject.toml")]):
        digest.update(path.read_bytes())
    stamp = VENV / ".installed"
    if stamp.exists() and stamp.read_text() == digest.hexdigest() and PYTHON.exists():
        return
    if not PYTHON.exists():
        say(f"creating {VENV.relative_to(ROOT)}")
        try:
            venv.create(VENV, with_pip=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            import shutil

            shutil.rmtree(VENV, ignore_errors=True)
            sys.exit(f"dev.py: cannot create a virtual environment ({exc}); on Debian or Ubuntu, "
                     "install it with `apt install python3-venv` and run this again")
    say("installing hermes-core and the example plugins")
    run(PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade", "pip")
    run(PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *INSTALL, env=PIP_ENV)
    stamp.write_text(digest.hexdigest())


def demo_model() -> Any:
    """examples/demo_model.py as a module: the main job's task and the scripted demo model."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo_model", DEMO_MODEL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def configure_model() -> bool:
    """Point the demo home at an OpenAI-compatible endpoint from HERMES_DEMO_BASE_URL and
    HERMES_DEMO_MODEL (its key, if it needs one, in OPENAI_API_KEY) unless its config already
    names a model (edit .hermes-demo/config.yaml to change it); True when one is configured."""
    config = DEMO_HOME / "config.yaml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    url, model = os.environ.get("HERMES_DEMO_BASE_URL", ""), os.environ.get("HERMES_DEMO_MODEL", "")
    if url and model and not any(line.startswith("model:") for line in text.splitlines()):
        text += f"model:\n  provider: custom\n  model: {model}\n  base_url: {url}\n"
        DEMO_HOME.mkdir(parents=True, exist_ok=True)
        config.write_text(text, encoding="utf-8")
    return any(line.startswith("model:") for line in text.splitlines())


def hermes(home: Path, *args: str, why: str = "", capture: bool = False) -> subprocess.CompletedProcess[str]:
    """`hermes ARGS` with HERMES_HOME=home, announced first (with why, if given) unless its output is captured."""
    if not capture:
        say(f"hermes {' '.join(shlex.quote(a) for a in args)}" + (f"    # {why}" if why else ""))
    return subprocess.run([str(BIN / "hermes"), *args], env=dict(os.environ, HERMES_HOME=str(home)), text=True,
                          capture_output=capture)


def agent_task(home: Path, task: str) -> int:
    """Run the agent on the main job's task in `home`, then show what it left behind: the stored
    session, the tool calls the example plugin's hook counted, and what memory holds."""
    code = hermes(home, "run", task, why="the agent, with the plugins' tools").returncode
    if code:
        return code
    latest = json.loads(hermes(home, "sessions", "list", "--json", capture=True).stdout or "[]")
    if latest:
        code = hermes(home, "sessions", "show", latest[0]["id"], why="the session the run stored").returncode
    code = code or hermes(home, "command", "toolstats", why="what textstats' post_tool_call hook counted").returncode
    query = json.dumps({"query": "most common word"})
    return code or hermes(home, "tools", "call", "memory_search", query, why="what memory holds").returncode


REAL_MODELS = [  # (who, the environment for `python3 dev.py run`, what to know)
    ("OpenAI", "OPENAI_API_KEY=sk-... HERMES_DEMO_BASE_URL=https://api.openai.com/v1 HERMES_DEMO_MODEL=gpt-4o-mini", ""),
    ("llama.cpp", "HERMES_DEMO_BASE_URL=http://127.0.0.1:8080/v1 HERMES_DEMO_MODEL=local",
     "llama-server -m MODEL.gguf --jinja"),
    ("Ollama", "HERMES_DEMO_BASE_URL=http://127.0.0.1:11434/v1 HERMES_DEMO_MODEL=llama3.1", "ollama pull llama3.1"),
    ("vLLM", "HERMES_DEMO_BASE_URL=http://127.0.0.1:8000/v1 HERMES_DEMO_MODEL=Qwen/Qwen2.5-7B-Instruct",
     "vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes"),
]


def scripted_agent_task(task: str) -> int:
    """No endpoint configured: run the agent on the scripted demo model, in a fresh home of its own
    (.hermes-demo/scripted) so the demo home's config never points at it."""
    import shutil

    home = SCRIPTED_HOME
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    with subprocess.Popen([str(PYTHON), str(DEMO_MODEL)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as server:
        assert server.stdout is not None and server.stdin is not None
        url = server.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            print("dev.py: the scripted demo model did not start (see above)", file=sys.stderr)
            return 1
        say(f"no LLM endpoint configured, so the agent runs on the SCRIPTED DEMO MODEL at {url}: fixed replies "
            f"from {shown(DEMO_MODEL)}, not a language model; the agent loop, the tool, the hook, "
            f"memory and the session store are real (HERMES_HOME={shown(home)}, fresh each run)")
        (home / "config.yaml").write_text(
            "# The scripted demo model of `python3 dev.py run` (examples/demo_model.py): not a language model.\n"
            f"model:\n  provider: custom\n  model: scripted-demo\n  base_url: {url}\n"
            "  api_key_env: HERMES_DEMO_NO_KEY      # no key is sent to it\n"
            "plugins:\n  enabled: [textstats]\n", encoding="utf-8")
        try:
            code = agent_task(home, task)
        finally:
            server.stdin.close()
    say(f"that was the scripted demo model; the same command on a real one (kept in {shown(DEMO_HOME)}/config.yaml):")
    for name, env, hint in REAL_MODELS:
        print(f"    {name + ':':11}{env} python3 dev.py run" + (f"    # {hint}" if hint else ""))
    return code


def main_job() -> int:
    """Show the plugins (the example one enabled), call the example plugin's tool and command,
    then run an agent task that uses the tool: on the configured LLM endpoint, or on the scripted
    demo model when there is none."""
    say(f"using HERMES_HOME={shown(DEMO_HOME)} (your ~/.hermes is not touched)")
    steps = [
        ["plugins", "enable", "--yes", "textstats"],  # the example plugin, enabled without asking
        ["plugins", "list"],
        ["tools", "list"],
        ["tools", "call", "text_stats", '{"text": "the cat sat on the mat with the hat", "top": 2}'],
        ["command", "wc", "hello plugin world"],
    ]
    for step in steps:
        code = hermes(DEMO_HOME, *step).returncode
        if code:
            return code
    task = demo_model().TASK
    if not configure_model():
        return scripted_agent_task(task)
    return agent_task(DEMO_HOME, task)


# The servers the fleet tests start (tests/helpers/postgres.py, tests/helpers/nginx.py), from the distribution's
# packages: each package and where its program is (PostgreSQL's under its version, /usr/lib/postgresql/15/bin/).
SERVERS = {"postgresql": "/usr/lib/postgresql/*/bin/postgres", "nginx": "/usr/sbin/nginx",
           "chromium": "/usr/bin/chromium",  # the browser group's (tests/browser), driven by Playwright
           "redis-server": "/usr/bin/redis-server"}  # the budgets' Redis counters (tests/helpers/redis.py)
# Read by invoke-rc.d while the packages install: no service may start, so no system PostgreSQL or nginx is left
# holding port 5432 or 80 (the tests start their own, on free loopback ports).
NO_SERVICES = "#!/bin/sh\n# dev.py: no service starts while the test servers' packages install.\nexit 101\n"


def install_servers() -> None:
    """Install PostgreSQL, nginx, Chromium and Redis when their programs are missing: as root with apt-get, their system
    services kept from starting (and from starting at boot); otherwise one line saying how, and the tests
    that need them are skipped."""
    import shutil

    missing = [package for package, program in SERVERS.items()
               if not glob.glob(program) and not shutil.which(Path(program).name)]
    if not missing:
        return
    command = f"apt-get install {' '.join(missing)}"
    if not shutil.which("apt-get") or not hasattr(os, "geteuid") or os.geteuid() != 0:
        say(f"{' and '.join(missing)} not installed: the tests that start them are skipped (install them with "
            f"`sudo {command}` on Debian or Ubuntu)")
        return
    say(f"installing {' and '.join(missing)} for the tests that start them ({command}, services not started)")
    policy = Path("/usr/sbin/policy-rc.d")
    ours = not policy.exists()
    if ours:
        policy.write_text(NO_SERVICES)
        policy.chmod(0o755)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        done = (subprocess.run(["apt-get", "update", "-qq"], env=env).returncode == 0
                and subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
                                   env=env).returncode == 0)
    finally:
        if ours:
            policy.unlink()
    if not done:
        say(f"installing {' and '.join(missing)} failed (see above): the tests that start them are skipped")
    elif Path("/run/systemd/system").is_dir():  # enabled by the packages: kept from starting at the next boot
        subprocess.run(["systemctl", "disable", "--now", "--quiet", *missing], check=False)


# The otel group's receiver (tests/otel): Arize Phoenix from PyPI, in a virtualenv of its own (its pins are not ours)
# under the cache, kept between runs; `hermes-requirement` in it, written last, says it is whole and what it holds.
PHOENIX = "arize-phoenix>=20,<21"
OTEL_CACHE = Path(os.environ.get("HERMES_OTEL_CACHE") or Path.home() / ".cache" / "hermes-core-otel")


def install_phoenix() -> None:
    """Install Phoenix into OTEL_CACHE/phoenix when it is not there (or another version is asked for)."""
    import shutil

    home = OTEL_CACHE / "phoenix"
    stamp = home / "hermes-requirement"
    if stamp.exists() and stamp.read_text() == PHOENIX:
        return
    say(f"installing {PHOENIX} into {home} for the otel group (once: a few minutes)")
    shutil.rmtree(home, ignore_errors=True)
    try:
        venv.create(home, with_pip=True)
        python = home / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")
        run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", PHOENIX)
    except (OSError, subprocess.CalledProcessError) as exc:
        shutil.rmtree(home, ignore_errors=True)
        say(f"installing Phoenix failed ({exc}): the otel group's tests are skipped (and fail under CI=true)")
        return
    stamp.write_text(PHOENIX)


QUICK = ["-m", "not slow and not interop and not fleet and not browser and not otel", "--hypothesis-profile=quick",
         "-n", "auto"]
WHOLE = ["-m", "not interop and not fleet and not browser and not otel"]  # the groups run after it, as CI does
FLEET = ["-m", "fleet", "-n", "auto"]
BROWSER = ["-m", "browser"]  # one Chromium at a time
OTEL = ["-m", "otel"]  # one Phoenix, started once for the group


def tests(extra: list[str]) -> int:
    """pytest with `extra`. The whole suite (no tests named) is spread over every core
    (pytest-xdist: most of a test's time is a `hermes` subprocess starting, which workers overlap);
    named tests run in one process unless `-n` says otherwise. `--quick` leaves out the slow groups
    (venvs, packaging, mypy, the fault suite), runs each property test on 10 examples and spreads
    the tests too: for a first look or a small change, never instead of the full run. `--fleet`
    runs the fleet group alone (tests/fleet: hosts on a PostgreSQL cluster and behind nginx, which
    the tests start), spread too; the whole suite leaves it to that second run; `--otel` the otel
    group (tests/otel: traces exported to Arize Phoenix, which the tests start)."""
    if "--quick" in extra:
        extra = [*QUICK, *(arg for arg in extra if arg != "--quick")]
    elif "--fleet" in extra:
        extra = [*FLEET, *(arg for arg in extra if arg != "--fleet")]
    elif "--browser" in extra:
        extra = [*BROWSER, *(arg for arg in extra if arg != "--browser")]
    elif "--otel" in extra:
        extra = [*OTEL, *(arg for arg in extra if arg != "--otel")]
    elif not any(not arg.startswith("-") or arg.startswith(("-n", "--numprocesses", "-m")) for arg in extra):
        extra = ["-n", "auto", *WHOLE, *extra]
    return subprocess.run([str(PYTHON), "-m", "pytest", *extra], cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if sys.version_info < (3, 10):
        print("hermes-core needs Python 3.10 or newer", file=sys.stderr)
        return 2
    setup()
    if argv[0] == "run":
        return main_job()
    install_servers()
    if "--otel" in argv and not {"--collect-only", "--co"} & set(argv):
        install_phoenix()
    return tests(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
