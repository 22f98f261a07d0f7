"""Hermes' plugin surface re-read for round 4 (issue 60): what a plugin may read from config at
register time, memory providers Hermes reads as exclusive, the whole model-provider profile
(`create_client` and the hooks the runtime reads), `gateway.run`'s runner for installers, and
context engines that prepare their compression in the background. Each plugin is written the way
the published ones are."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_core import PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import ScriptedServer
from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin, write_config

# A plugin that sizes itself from the model's window at register time, as a published one does.
SIZED = '''
from hermes_cli.config import load_config

def register(ctx):
    window = load_config()["model"]["context_length"]
    if not isinstance(window, int):
        raise RuntimeError(f"model.context_length is not an integer: {window!r}")
    ctx.register_tool("window", "sized", {"name": "window", "description": "the window",
                      "parameters": {"type": "object", "properties": {}}}, lambda args, **kw: str(window))
'''


def test_a_plugin_reads_an_integer_context_length_at_register_time(home: Path) -> None:
    make_folder_plugin(home / "plugins", "sized", SIZED, "name: sized\nversion: 1.0.0\n")
    write_config(home, "model:\n  provider: custom\n  model: local-model\nplugins:\n  enabled: [sized]\n")
    row = next(p for p in hermes_json("plugins", "doctor")["plugins"] if p["id"] == "sized")
    assert row["status"] == "ok", row["error"]
    assert hermes("tools", "call", "window", "{}").stdout.strip() == "128000"  # the window hermes-core runs with
    write_config(home, "model:\n  model: local-model\n  context_length: 32000\nplugins:\n  enabled: [sized]\n")
    assert hermes("tools", "call", "window", "{}").stdout.strip() == "32000"  # the operator's


# A folder memory provider as published ones are (copied into $HERMES_HOME/plugins by their
# installer): a manifest that declares no kind, and an `__init__.py` whose `register` calls
# `ctx.register_memory_provider`. Hermes' heuristic reads it as `exclusive`: its general manager
# never loads it (not even from plugins.enabled), its memory loader does when `memory.provider`
# names the folder. The folder, the manifest and the provider have three different names here, as
# they often do in published ones.
EXCLUSIVE = '''
import json
import os
from pathlib import Path

from agent.memory_provider import MemoryProvider

NOTES = Path(os.environ["HERMES_HOME"]) / "jotter-notes.jsonl"


class Jotter(MemoryProvider):
    @property
    def name(self):
        return "jotter"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        self._session = session_id

    def get_tool_schemas(self):
        return []

    def system_prompt_block(self):
        return "Jotter keeps notes of this conversation."

    def prefetch(self, query, *, session_id=""):
        return "Noted earlier: the user's cat is called Miso." if "cat" in query else ""

    def sync_turn(self, user_content, assistant_content, *, session_id=""):
        with NOTES.open("a") as out:
            out.write(json.dumps({"user": user_content, "assistant": assistant_content}) + "\\n")


def register(ctx):
    with (Path(os.environ["HERMES_HOME"]) / "jotter-imported").open("a") as out:
        out.write("x")
    ctx.register_memory_provider(Jotter())
'''


def test_an_enabled_memory_provider_without_a_kind_waits_for_memory_provider(home: Path) -> None:
    make_folder_plugin(home / "plugins", "jot_memory", EXCLUSIVE, "name: jotter-plugin\nversion: 0.1.0\n")
    assert "memory.provider: jot_memory" in hermes("plugins", "enable", "--yes", "jotter-plugin").stdout
    (home / "jotter-imported").unlink()  # enable's dry run ran its register() in a process of its own
    listed = next(p for p in hermes_json("plugins", "list") if p["id"] == "jotter-plugin")
    assert (listed["kind"], listed["enabled"]) == ("memory", False)
    assert "loaded only when memory.provider selects it (memory.provider: jot_memory)" in listed["reason"]
    report = hermes_json("plugins", "doctor")
    row = next(p for p in report["plugins"] if p["id"] == "jotter-plugin")
    assert row["status"] == "exclusive" and row["registered"] == {"providers": ["memory:jot_memory"]}
    assert any("exclusive memory provider" in w and "memory.provider: jot_memory" in w for w in report["warnings"])
    assert report["slots"]["memory"] == "builtin" and not (home / "jotter-imported").exists()  # never imported
    assert hermes("plugins", "doctor").returncode == 0  # waiting to be selected is nothing wrong


def test_selecting_it_by_its_folder_loads_and_uses_it(home: Path, llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "jot_memory", EXCLUSIVE, "name: jotter-plugin\nversion: 0.1.0\n")
    llm_config(home, llm_server.url, "memory:\n  provider: jot_memory\n")  # Hermes' way: no plugins.enabled entry
    listed = next(p for p in hermes_json("plugins", "list") if p["id"] == "jotter-plugin")
    assert (listed["enabled"], listed["active"]) == (True, "memory")
    report = hermes_json("plugins", "doctor")
    row = next(p for p in report["plugins"] if p["id"] == "jotter-plugin")
    assert row["status"] == "ok" and row["registered"]["providers"] == ["memory:jotter"]
    assert report["slots"]["memory"] == "jotter"
    llm_server.reply("Miso, of course.")
    assert hermes("run", "What is my cat called?").stdout.strip() == "Miso, of course."
    sent = llm_server.requests[0].messages
    assert "Jotter keeps notes" in sent[0]["content"] and "Miso" in sent[-1]["content"]
    notes = [json.loads(line) for line in (home / "jotter-notes.jsonl").read_text().splitlines()]
    assert notes == [{"user": "What is my cat called?", "assistant": "Miso, of course."}]


# Another published way to reach the registrar: only when the context has it.
PROBING = EXCLUSIVE.replace("    ctx.register_memory_provider(Jotter())", '''    register_memory_provider = getattr(ctx, "register_memory_provider", None)
    if callable(register_memory_provider):
        register_memory_provider(Jotter())''')


def test_a_manifestless_probing_or_kind_exclusive_memory_folder_is_exclusive_too(home: Path) -> None:
    make_folder_plugin(home / "plugins", "loose", EXCLUSIVE, None)
    make_folder_plugin(home / "plugins", "probing", PROBING, "name: probing\n")
    make_folder_plugin(home / "plugins", "declared", EXCLUSIVE, "name: declared\nkind: exclusive\n")
    make_folder_plugin(home / "plugins", "opted_out", EXCLUSIVE, "name: opted_out\nkind: standalone\n")
    write_config(home, "plugins:\n  enabled: [loose, probing, declared, opted_out]\n")
    rows = {p["id"]: p for p in hermes_json("plugins", "doctor")["plugins"]}
    assert rows["loose"]["status"] == rows["probing"]["status"] == rows["declared"]["status"] == "exclusive"
    assert rows["opted_out"]["status"] == "ok"  # a declared kind is the author's word, as in Hermes
    write_config(home, "memory:\n  provider: probing\n")
    assert hermes_json("plugins", "doctor")["slots"]["memory"] == "jotter"


# An external-process provider as published ones are: its own client through `create_client`,
# refusing to load on a core without it.
OWN_CLIENT = '''
import json, os
from types import SimpleNamespace
from typing import Any

from providers import register_provider
from providers.base import ProviderProfile

if not hasattr(ProviderProfile, "create_client"):
    raise ImportError("echo-acp requires Hermes core with `ProviderProfile.create_client` (>= v0.20.0)")


class EchoClient:
    def __init__(self, **client_kwargs: Any) -> None:
        seen = {k: client_kwargs.get(k) for k in ("command", "args", "base_url", "max_retries")}
        with open(os.path.join(os.environ["HERMES_HOME"], "client-kwargs.json"), "w") as handle:
            json.dump(seen, handle)
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs: Any) -> Any:
        said = kwargs["messages"][-1]["content"]
        message = SimpleNamespace(role="assistant", content=f"echo-cli heard: {said}", tool_calls=None)
        return SimpleNamespace(choices=[SimpleNamespace(index=0, message=message, finish_reason="stop")],
                               usage=SimpleNamespace(prompt_tokens=7, completion_tokens=3, total_tokens=10),
                               model=kwargs["model"])


class EchoProfile(ProviderProfile):
    def create_client(self, **client_kwargs: Any) -> Any:
        return EchoClient(**client_kwargs)

    def fetch_models(self, *, api_key=None, base_url=None, timeout=8.0):
        return None


register_provider(EchoProfile(name="echo-acp", aliases=("echo",), auth_type="external_process",
                              base_url="acp://echo", process_command="echo-cli", process_args=("--acp",),
                              process_command_env_vars=("ECHO_CLI_BIN",), env_vars=(),
                              supports_model_listing=False, fallback_models=("echo-1",)))
'''


def test_a_provider_with_its_own_client_answers_the_session(home: Path, monkeypatch) -> None:
    make_folder_plugin(home / "plugins" / "model-providers", "echo-acp", OWN_CLIENT, None)
    monkeypatch.setenv("ECHO_CLI_BIN", "/opt/echo/bin/echo-cli")
    write_config(home, "plugins:\n  enabled: [model-providers/echo-acp]\nmodel:\n  provider: echo\n  model: echo-1\n")
    doctor = next(p for p in hermes_json("plugins", "doctor")["plugins"] if p["id"] == "model-providers/echo-acp")
    assert (doctor["status"], doctor["registered"]) == ("ok", {"model_providers": ["echo-acp"]}), doctor["error"]
    assert hermes("run", "hello there").stdout.strip() == "echo-cli heard: hello there"
    given = json.loads((home / "client-kwargs.json").read_text())
    assert given == {"command": "/opt/echo/bin/echo-cli", "args": ["--acp"], "base_url": "acp://echo",
                     "max_retries": 0}  # the environment's binary wins over the profile's, as in Hermes


SHAPED = '''
from providers import register_provider
from providers.base import OMIT_TEMPERATURE, ProviderProfile


class Shaped(ProviderProfile):
    def prepare_messages(self, messages):
        return [*messages[:-1], {**messages[-1], "content": messages[-1]["content"] + " [shaped]"}]

    def build_extra_body(self, *, session_id=None, **context):
        return {"provider": {"order": ["fast"]}, "seen_model": context.get("model")}

    def build_api_kwargs_extras(self, *, reasoning_config=None, **context):
        return {"reasoning": {"effort": "low"}}, {"reasoning_effort": "low"}

    def get_max_tokens(self, model):
        return 512 if model == "shaped-large" else None


register_provider(Shaped(name="shaped", base_url=BASE_URL, env_vars=("SHAPED_KEY",),
                         fixed_temperature=OMIT_TEMPERATURE))
'''


def test_a_profile_shapes_each_request_as_hermes_transport_does(home: Path, llm_server: ScriptedServer,
                                                                monkeypatch) -> None:
    make_folder_plugin(home / "plugins", "shaped", SHAPED.replace("BASE_URL", repr(llm_server.url)),
                       "name: shaped\nkind: model-provider\n")
    monkeypatch.setenv("SHAPED_KEY", "sk-shaped")
    write_config(home, "plugins:\n  enabled: [shaped]\nmodel:\n  provider: shaped\n  model: shaped-large\n")
    llm_server.reply("Shaped answer.")
    assert hermes("run", "hello").stdout.strip() == "Shaped answer."
    body = llm_server.requests[0].body
    assert body["messages"][-1]["content"] == "hello [shaped]"
    assert body["provider"] == {"order": ["fast"]} and body["seen_model"] == "shaped-large"
    assert body["reasoning"] == {"effort": "low"} and body["reasoning_effort"] == "low"
    assert body["max_tokens"] == 512 and "temperature" not in body


def test_the_profile_serves_hermes_whole_contract(home: Path) -> None:
    make_folder_plugin(home / "plugins", "probe", '''
from providers.base import ProviderProfile

P = ProviderProfile(name="probe", base_url="https://api.probe.invalid/v1", supports_model_listing=False)
HOOKS = ("create_client", "build_client_kwargs_extras", "fetch_account_usage", "resolve_aux_model",
         "default_reasoning_config", "get_model_context_length", "get_usage_cost", "supported_reasoning_efforts",
         "setup_status", "discover_models", "default_vision_model", "prepare_messages", "build_extra_body",
         "build_api_kwargs_extras", "get_max_tokens", "fetch_models", "get_hostname")
assert all(callable(getattr(ProviderProfile, h)) for h in HOOKS)
assert P.create_client(api_key="k", base_url="u", future_key=1) is None
assert P.build_client_kwargs_extras(base_url="u") == {} and P.resolve_aux_model(vision=True) == ""
assert P.fetch_models(api_key="k") is None  # no listing: no request
assert (P.get_model_context_length("m"), P.supported_reasoning_efforts("m"), P.setup_status()) == (None, None, None)

def register(ctx):
    pass
''', "name: probe\nversion: 1.0.0\n")
    write_config(home, "plugins:\n  enabled: [probe]\n")
    row = next(p for p in hermes_json("plugins", "doctor", check=None)["plugins"] if p["id"] == "probe")
    assert row["status"] == "ok", row["error"]


# A platform plugin's installer, as published ones ship it: it checks that the interpreter runs
# beside Hermes (it can import the gateway's runner) and copies the adapter into $HERMES_HOME.
INSTALLER = '''
import os, shutil, subprocess, sys
from pathlib import Path

ADAPTER = """
from gateway.platforms.base import BasePlatformAdapter
from gateway.run import GatewayRunner


class Pigeon(BasePlatformAdapter):
    pass


def register(ctx):
    ctx.register_platform("pigeon", "Carrier pigeon", lambda config: Pigeon(config), lambda: True)
"""


def main():
    probe = subprocess.run([sys.executable, "-c", "from gateway.run import GatewayRunner; "
                            "assert callable(GatewayRunner.start) and callable(GatewayRunner._handle_message); "
                            "r = GatewayRunner(); print(type(r.adapters).__name__, type(r.config).__name__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        sys.exit("pigeon: the active interpreter cannot import `gateway.run.GatewayRunner`; "
                 "install into the environment Hermes runs in")
    target = Path(os.environ["HERMES_HOME"]) / "plugins" / "pigeon"
    target.mkdir(parents=True, exist_ok=True)
    (target / "__init__.py").write_text(ADAPTER)
    (target / "plugin.yaml").write_text("name: pigeon\\nversion: 1.0.0\\nkind: platform\\n")
    print("installed pigeon:", probe.stdout.strip())
'''


def test_an_installer_that_looks_for_the_gateway_runner_completes(home: Path, site: Path) -> None:
    (site / "pigeon_installer.py").write_text(INSTALLER, encoding="utf-8")
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", "import pigeon_installer; pigeon_installer.main()"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "installed pigeon: dict GatewayConfig"
    write_config(home, "plugins:\n  enabled: [pigeon]\n")
    listed = next(p for p in hermes_json("plugins", "list") if p["id"] == "pigeon")
    assert (listed["kind"], listed["enabled"], listed["needs_host"]) == ("platform", True, None)
    row = next(p for p in hermes_json("plugins", "doctor")["plugins"] if p["id"] == "pigeon")
    assert row["status"] == "ok", row["error"]
    assert "gateway.run" in row["hermes_names"]


# A context engine that prepares its compression in the background, as Hermes' e2e plugin does.
PROGRESSIVE = '''
import json, os
from agent.context_engine import ContextCompressionCandidate, ContextEngine


def note(*event):
    with open(os.path.join(os.environ["HERMES_HOME"], "events.jsonl"), "a") as handle:
        handle.write(json.dumps(event) + "\\n")


class Progressive(ContextEngine):
    def __init__(self):
        self.prepare_calls = 0

    @property
    def name(self):
        return "progressive"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages[-1:]

    def should_prepare_async_compression(self, prompt_tokens=None, messages=None):
        return bool(prompt_tokens and prompt_tokens >= 10_000)

    def prepare_async_compression(self, messages, current_tokens=None, focus_topic=None):
        note("prepared", messages[0]["content"], current_tokens)
        return ContextCompressionCandidate(messages=[
            {"role": "user", "content": "plugin compressed context"},
            {"role": "assistant", "content": "plugin compressed answer"},
        ])

    def on_async_compression_applied(self, candidate, **kwargs):
        note("applied", candidate.base_message_count)

    def on_async_compression_discarded(self, candidate, reason, **kwargs):
        note("discarded", reason)


def register(ctx):
    ctx.register_context_engine(Progressive())
'''


def _events(home: Path) -> list:
    return [tuple(json.loads(line)) for line in (home / "events.jsonl").read_text().splitlines()]


def _prepared(agent: Agent) -> object:
    import time

    deadline = time.monotonic() + 10
    while agent.session.pending_compression is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return agent.session.pending_compression


def test_a_compression_prepared_off_the_turn_is_applied_when_still_valid(home: Path,
                                                                          llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "progressive", PROGRESSIVE, "name: progressive\nversion: 0.1.0\n")
    llm_config(home, llm_server.url, "context:\n  engine: progressive\nplugins:\n  enabled: [progressive]\n")
    llm_server.reply("first answer", usage={"prompt_tokens": 25_000, "completion_tokens": 10})
    llm_server.reply("second answer", usage={"prompt_tokens": 2_000, "completion_tokens": 10})
    with Agent(PluginManager()) as agent:
        agent.ask("first ask")
        assert _prepared(agent) is not None
        agent.ask("second ask")
        window = [m["content"] for m in agent.messages]
    assert window == ["plugin compressed context", "plugin compressed answer", "second ask", "second answer"]
    sent = [m["content"] for m in llm_server.requests[1].body["messages"][1:]]
    assert sent == ["plugin compressed context", "plugin compressed answer", "second ask"]
    assert _events(home) == [("prepared", "first ask", 25_000), ("applied", 2)]


def test_a_prepared_compression_is_discarded_when_the_conversation_moved_on(home: Path,
                                                                             llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "progressive", PROGRESSIVE, "name: progressive\nversion: 0.1.0\n")
    llm_config(home, llm_server.url, "context:\n  engine: progressive\nplugins:\n  enabled: [progressive]\n")
    llm_server.reply("first answer", usage={"prompt_tokens": 25_000, "completion_tokens": 10})
    llm_server.reply("second answer", usage={"prompt_tokens": 2_000, "completion_tokens": 10})
    with Agent(PluginManager()) as agent:
        agent.ask("first ask")
        assert _prepared(agent) is not None
        agent.compress()  # a manual /compress rewrote the window the candidate was prepared from
        agent.ask("second ask")
        window = [m["content"] for m in agent.messages]
    assert window == ["first answer", "second ask", "second answer"]
    assert _events(home) == [("prepared", "first ask", 25_000), ("discarded", "stale_digest")]


# A memory provider with Hermes' config schema and save_config, as `hermes plugins config` fills it.
CONFIGURED = '''
import json, os
from agent.memory_provider import MemoryProvider

class Vault(MemoryProvider):
    name = "vault"
    def is_available(self): return True
    def initialize(self, session_id, **kwargs): pass
    def get_tool_schemas(self): return []
    def get_config_schema(self):
        return [{"key": "vault_path", "description": "Where the notes live", "required": True},
                {"key": "mode", "description": "How to write", "default": "append", "choices": ["append", "replace"]},
                {"key": "api_key", "description": "Vault key", "secret": True, "env_var": "VAULT_KEY"}]
    def save_config(self, values, hermes_home):
        with open(os.path.join(hermes_home, "vault.json"), "w") as handle:
            json.dump(values, handle)

def register(ctx):
    ctx.register_memory_provider(Vault())
'''


def test_hermes_plugins_config_saves_a_memory_providers_settings(home: Path) -> None:
    make_folder_plugin(home / "plugins", "vault", CONFIGURED, None)
    write_config(home, "plugins:\n  enabled: [vault]\n")
    result = hermes("plugins", "config", "vault", "--set", "vault_path=/srv/notes")
    assert "VAULT_KEY" in result.stdout and "vault: saved vault_path, mode" in result.stdout
    assert json.loads((home / "vault.json").read_text()) == {"vault_path": "/srv/notes", "mode": "append"}
    missing = hermes("plugins", "config", "vault", check=None)  # not a terminal: the required one has no default
    assert missing.returncode != 0 and "vault_path is required" in missing.stderr and "Traceback" not in missing.stderr
