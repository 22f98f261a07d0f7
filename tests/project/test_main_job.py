"""The README's main job, `python3 dev.py run`, run as a subprocess: with no endpoint it runs a
real agent task on the scripted demo model (tool called, hook fired, memory written, session
stored) and says how to use a real model; with an endpoint configured it runs on that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core.testing import ScriptedServer, tool_call
from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="dev.py run works in the checkout's .venv; run the suite with `python3 dev.py test`",
)


def main_job(demo_home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python3 dev.py run` with its demo home in `demo_home` and no endpoint but `env`'s."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("HERMES_DEMO_", "HERMES_HOME", "OPENAI_")) and k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, str(ROOT / "dev.py"), "run"], capture_output=True, text=True,
                            timeout=300, cwd=demo_home.parent, env=clean | {"HERMES_DEMO_HOME": str(demo_home)} | env)
    assert result.returncode == 0, (result.stdout[-4000:], result.stderr[-4000:])
    return result


def stored_session(home: Path) -> dict:
    hermes = str(Path(sys.executable).parent / "hermes")
    env = os.environ | {"HERMES_HOME": str(home)}
    listed = json.loads(subprocess.run([hermes, "sessions", "list", "--json"], capture_output=True, text=True,
                                       env=env, check=True).stdout)
    assert len(listed) == 1, listed
    return json.loads(subprocess.run([hermes, "sessions", "show", listed[0]["id"], "--json"], capture_output=True,
                                     text=True, env=env, check=True).stdout)


def test_with_no_endpoint_the_agent_runs_on_the_scripted_demo_model(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    result = main_job(demo)
    out = result.stdout
    assert "SCRIPTED DEMO MODEL" in out and "not a language model" in out
    assert '→ text_stats {"text": "the cat sat on the mat with the hat"' in result.stderr  # the agent's progress
    assert '[scripted demo model] text_stats counted 9 words; the most common word is "the"' in out
    assert "[tool] " + json.dumps({"words": 9, "lines": 1, "characters": 35, "top_words": [["the", 3]]}) in out
    assert "memory_save 1, text_stats 1" in out.splitlines()  # textstats' post_tool_call hook counted both calls
    found = json.loads(out.split("# what memory holds\n")[1].splitlines()[0])
    assert found["count"] == 1 and '"the" (3 of its 9 words)' in found["results"][0]["content"]
    for who in ("OpenAI:", "llama.cpp:", "Ollama:", "vLLM:"):
        (line,) = [line for line in out.splitlines() if line.strip().startswith(who)]
        assert "HERMES_DEMO_BASE_URL=http" in line and "HERMES_DEMO_MODEL=" in line and "python3 dev.py run" in line
    session = stored_session(demo / "scripted")
    assert [m["role"] for m in session["messages"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [c["name"] for c in session["tool_calls"]] == ["text_stats", "memory_save"]
    assert "model:" not in (demo / "config.yaml").read_text()  # the demo home is not pointed at the scripted model


def test_with_an_endpoint_configured_the_agent_runs_against_it(tmp_path: Path, llm_server: ScriptedServer) -> None:
    llm_server.reply("", tool_calls=[tool_call("text_stats", {"text": "the cat sat on the mat with the hat"})])
    llm_server.reply("Nine words; 'the' is the most common.")
    demo = tmp_path / "demo"
    result = main_job(demo, HERMES_DEMO_BASE_URL=llm_server.url, HERMES_DEMO_MODEL="my-model")
    assert "SCRIPTED" not in result.stdout and "Nine words; 'the' is the most common." in result.stdout
    first = llm_server.requests[0].body
    assert first["model"] == "my-model" and "the cat sat on the mat" in first["messages"][-1]["content"]
    assert "text_stats" in {tool["function"]["name"] for tool in first["tools"]}
    assert json.loads(llm_server.requests[1].body["messages"][-1]["content"])["words"] == 9  # the real tool's answer
    assert "model: my-model" in (demo / "config.yaml").read_text()  # kept for the next run
    assert stored_session(demo)["tool_calls"][0]["name"] == "text_stats"
