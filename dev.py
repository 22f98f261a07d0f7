#!/usr/bin/env python3
"""The project's two commands, needing nothing but Python 3.10+.

    python3 dev.py run     set up .venv, then show the plugins and call an example plugin's tool
    python3 dev.py test    set up .venv, then run the test suite (extra arguments go to pytest)

The virtual environment is (re)installed only when a pyproject.toml changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
EXAMPLE = ROOT / "examples" / "hermes-textstats"
EXAMPLES = [EXAMPLE, ROOT / "examples" / "hermes-tldr", ROOT / "examples" / "hermes-paste-to-tasks"]
DEMO_HOME = ROOT / ".hermes-demo"
INSTALL = ["-e", f"{ROOT}[test]", *[arg for path in EXAMPLES for arg in ("-e", str(path))]]
# setuptools ends every editable install of a project that maps a package to another folder (ours
# ships cookiecutter-plugin/ as hermes_core_template) with an "Editable installation." box that
# asks nothing of anyone; that notice alone is silenced, every other warning stays visible.
PIP_ENV = dict(os.environ, PYTHONWARNINGS=",".join(
    filter(None, [os.environ.get("PYTHONWARNINGS"), "ignore:Editable installation"])))


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def run(*args: object, **kwargs: object) -> None:
    subprocess.run([str(a) for a in args], check=True, **kwargs)  # type: ignore[call-overload]


def setup() -> None:
    """Create .venv and install hermes-core (with test extras) and the example plugins into it."""
    digest = hashlib.sha256()
    for path in sorted([ROOT / "pyproject.toml", *ROOT.glob("examples/*/pyproject.toml")]):
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


TASK = ("Use the text_stats tool to count the words of this sentence, then tell me the most common word: "
        "the cat sat on the mat with the hat")


def configure_model() -> bool:
    """Point the demo home at an OpenAI-compatible endpoint from HERMES_DEMO_BASE_URL and
    HERMES_DEMO_MODEL (its key, if it needs one, in OPENAI_API_KEY) unless its config already
    names a model (edit .hermes-demo/config.yaml to change it); True when one is configured."""
    config = DEMO_HOME / "config.yaml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    url, model = os.environ.get("HERMES_DEMO_BASE_URL", ""), os.environ.get("HERMES_DEMO_MODEL", "")
    if url and model and not any(line.startswith("model:") for line in text.splitlines()):
        text += f"model:\n  provider: custom\n  model: {model}\n  base_url: {url}\n"
        DEMO_HOME.mkdir(exist_ok=True)
        config.write_text(text, encoding="utf-8")
    return any(line.startswith("model:") for line in text.splitlines())


def main_job() -> int:
    """Show the plugins (the example one enabled), call the example plugin's tool, and run an
    agent task that uses it when an LLM endpoint is configured."""
    env = dict(os.environ, HERMES_HOME=str(DEMO_HOME))
    hermes = BIN / "hermes"
    say(f"using HERMES_HOME={DEMO_HOME.relative_to(ROOT)} (your ~/.hermes is not touched)")
    steps = [
        ["plugins", "enable", "textstats"],
        ["plugins", "list"],
        ["tools", "list"],
        ["tools", "call", "text_stats", '{"text": "the cat sat on the mat with the hat", "top": 2}'],
        ["command", "wc", "hello plugin world"],
    ]
    for step in steps:
        say("hermes " + " ".join(step))
        code = subprocess.run([str(hermes), *step], env=env).returncode
        if code:
            return code
    if not configure_model():
        say("no LLM endpoint configured, so no agent run: set HERMES_DEMO_BASE_URL and HERMES_DEMO_MODEL "
            "(any OpenAI-compatible endpoint; its key in OPENAI_API_KEY) and run this again")
        return 0
    say(f"hermes run {TASK!r}")
    return subprocess.run([str(hermes), "run", TASK], env=env).returncode


def tests(extra: list[str]) -> int:
    return subprocess.run([str(PYTHON), "-m", "pytest", *extra], cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if sys.version_info < (3, 10):
        print("hermes-core needs Python 3.10 or newer", file=sys.stderr)
        return 2
    setup()
    return main_job() if argv[0] == "run" else tests(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
