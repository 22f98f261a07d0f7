"""The plugin template: every kind renders, installs into a fresh venv, is discovered and
enabled by `hermes`, and passes its own test suite with no edits."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, hermes, make_venv, pip_install


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = make_venv(tmp_path_factory.mktemp("venv") / "env")
    pip_install(python, ROOT)
    return python


def in_venv(python: Path, home: Path, *args: str, cwd: Path, check: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")} | {"HERMES_HOME": str(home)}
    result = subprocess.run([*args], capture_output=True, text=True, env=env, timeout=600, cwd=cwd)
    assert result.returncode == check, (result.stdout[-3000:], result.stderr[-3000:])
    return result


@pytest.mark.parametrize(("kind", "registered"), [
    ("tool", {"tools": ["hello_tool_count"], "commands": ["hello-tool"]}),
    ("context_engine", {"providers": ["context_engine:hello-context-engine"]}),
    ("memory_provider", {"providers": ["memory:hello-memory-provider"]}),
])
def test_a_rendered_project_installs_is_discovered_and_passes_its_own_tests(
    venv_python: Path, tmp_path: Path, kind: str, registered: dict
) -> None:
    name = f"Hello {kind.replace('_', ' ').title()}"
    slug = name.lower().replace(" ", "-")
    bin_dir = venv_python.parent
    home = tmp_path / "home"
    home.mkdir()
    in_venv(venv_python, home, str(bin_dir / "hermes"), "plugins", "new", name, "--kind", kind,
            "--output-dir", str(tmp_path), "--author", "Ada", cwd=tmp_path)
    project = tmp_path / slug
    pip_install(venv_python, project)
    listed = {r["id"]: r for r in json.loads(
        in_venv(venv_python, home, str(bin_dir / "hermes"), "plugins", "list", "--json", cwd=tmp_path).stdout)}
    assert listed[slug]["source"] == "entrypoint" and listed[slug]["enabled"] is False
    in_venv(venv_python, home, str(bin_dir / "hermes"), "plugins", "enable", "--yes", slug, cwd=tmp_path)
    doctor = json.loads(in_venv(venv_python, home, str(bin_dir / "hermes"), "plugins", "doctor", "--json",
                                cwd=tmp_path).stdout)
    plugin = next(p for p in doctor["plugins"] if p["id"] == slug)
    assert plugin["status"] == "ok" and plugin["registered"] == registered
    tests = in_venv(venv_python, home, str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "-W", "error", cwd=project)
    assert " passed" in tests.stdout and "failed" not in tests.stdout


def test_plain_cookiecutter_renders_the_template_too(tmp_path: Path) -> None:
    from cookiecutter.main import cookiecutter

    made = Path(cookiecutter(str(ROOT / "cookiecutter-plugin"), no_input=True, output_dir=str(tmp_path),
                             extra_context={"plugin_name": "Plain Render", "kind": "memory_provider"}))
    assert made == tmp_path / "plain-render"
    assert 'plain-render = "hermes_plain_render"' in (made / "pyproject.toml").read_text()
    assert "class PlainRenderMemory(MemoryProvider)" in (made / "hermes_plain_render" / "__init__.py").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["9 lives", "--kind", "tool"], "gives the id '9-lives', which is not valid"),
    (["ok", "--kind", "widget"], "Invalid value for '--kind': 'widget' is not one of"),
    (["ok"], "Missing option '--kind'"),
])
def test_a_bad_name_or_kind_is_a_one_line_error(home: Path, tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    result = hermes("plugins", "new", *args, "--output-dir", str(out), check=None)
    assert result.returncode != 0 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not list(out.iterdir())


def test_an_existing_folder_is_never_overwritten(home: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    result = hermes("plugins", "new", "Taken", "--kind", "tool", "--output-dir", str(tmp_path), check=1)
    assert "already exists" in result.stderr and (tmp_path / "taken" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("kind", ["tool", "context_engine", "memory_provider"])
def test_the_rendered_readme_reads_cleanly(home: Path, tmp_path: Path, kind: str) -> None:
    hermes("plugins", "new", "Word Tools", "--kind", kind, "--output-dir", str(tmp_path))
    text = (tmp_path / "word-tools" / "README.md").read_text(encoding="utf-8")
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    assert paragraphs[:2] == ["# Word Tools", "A plugin for hermes-core."]
    openings = [" ".join(p.split()[:3]) for p in paragraphs]
    assert len(openings) == len(set(openings)), f"a paragraph repeats another's opening: {openings}"
    blocks = text.split("```")[1::2]  # inside fenced blocks, a comment is a line of its own or aligned
    columns = {line.index(" #") for block in blocks for line in block.splitlines()
               if " #" in line and not line.lstrip().startswith("#") and not block.startswith("yaml")}
    assert len(columns) <= 1, f"inline comments start at different columns: {sorted(columns)}"
    assert "{{" not in text and "{%" not in text and all(len(line) <= 110 for line in text.splitlines())
