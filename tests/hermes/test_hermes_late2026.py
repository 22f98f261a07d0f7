"""What changed in Hermes' plugin surface late in 2026 (LATE-2026.md), as plugins written
against it use it: skills at a `str` path, Hermes' command argument modes, the constants of
`agent.memory_provider`, the optional compression claim of context engines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hermes_core import PluginManager
from tests.helpers import make_folder_plugin, write_config


def test_a_skill_at_a_str_path_and_a_command_in_hermes_argument_modes(home: Path) -> None:
    folder = make_folder_plugin(home / "plugins", "late", '''
import os

def register(ctx):
    here = os.path.dirname(__file__)
    ctx.register_skill("howto", os.path.join(here, "SKILL.md"), description="How to")
    ctx.register_command("opts", lambda raw: f"got {raw!r}", args_hint="--flag VALUE", argument_mode="options")
    ctx.register_command("mix", lambda raw: f"mixed {raw!r}", argument_mode="mixed")
''', "name: late\n")
    (folder / "SKILL.md").write_text("# How to\n", encoding="utf-8")
    write_config(home, "plugins:\n  enabled: [late]\n")
    manager = PluginManager(home=home).load()
    try:
        record = manager.record("late")
        assert record.status == "ok", record.failure
        skill = manager.skills.get("late:howto")
        assert skill is not None and skill.path == folder / "SKILL.md"
        assert manager.run_command("opts", "--flag 3") == "got '--flag 3'"
        assert manager.run_command("mix", "a --b") == "mixed 'a --b'"
        assert record.warnings == []  # Hermes' modes are known modes, not "unknown argument_mode"
    finally:
        manager.close()


def test_agent_memory_provider_has_hermes_module_constants(home: Path) -> None:
    make_folder_plugin(home / "plugins", "consts", '''
from agent.memory_provider import (INDICATOR_GLYPH, PRE_COMPRESS_CHECKPOINT_API_VERSION, TRIVIAL_PROMPT_RE,
                                   is_trivial_prompt)

def register(ctx):
    ctx.register_command("consts", lambda raw: repr((PRE_COMPRESS_CHECKPOINT_API_VERSION, INDICATOR_GLYPH,
        [bool(TRIVIAL_PROMPT_RE.match(t)) == is_trivial_prompt(t) for t in ("ok!", "thanks :)", "k8s", "Lgtm.")],
        [bool(TRIVIAL_PROMPT_RE.match(t)) for t in ("ok!", "k8s")])))
''', "name: consts\n")
    write_config(home, "plugins:\n  enabled: [consts]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.run_command("consts") == repr((2, "🧠", [True] * 4, [True, False]))
    finally:
        manager.close()


def conversation(turns: int) -> list[dict]:
    messages = [{"role": "system", "content": "be brief"}]
    for n in range(turns):
        messages += [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}]
    return messages


CLAIMING = '''
from agent.context_engine import ContextEngine


class Claiming(ContextEngine):
    name = "claiming"
    calls = []

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return True

    def prepare_compression_operation(self, messages, *, session_id=None, attempt_generation=None):
        self.calls.append(("prepare", len(messages), bool(session_id)))
        return ("sanitize", {"claim": len(messages)})

    def compress(self, messages, current_tokens=None, focus_topic=None, operation_claim=None):
        self.calls.append(("compress", operation_claim))
        return messages[:1] + messages[-2:], operation_claim


def register(ctx):
    ctx.register_context_engine(Claiming())
'''


def test_an_engines_compression_claim_is_offered_and_its_pair_taken(home: Path) -> None:
    make_folder_plugin(home / "plugins", "claiming", CLAIMING, "name: claiming\nkind: context_engine\n")
    write_config(home, "context:\n  engine: claiming\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.record("claiming").status == "ok", manager.record("claiming").failure
        messages = conversation(5)
        with manager.open_session() as session:
            result = session.compress(messages)
            assert result == messages[:1] + messages[-2:]  # the messages of the (messages, claim) pair
            assert session.problems == []

        calls = sys.modules["hermes_plugins.claiming"].Claiming.calls
        assert calls == [("prepare", 11, True), ("compress", {"claim": 11})]
    finally:
        manager.close()


def test_the_plugin_runtime_names_and_their_facade(home: Path) -> None:
    make_folder_plugin(home / "plugins", "typed", '''
from hermes_cli.plugins import VALID_HOOKS, PluginContext, PluginManifest
from plugin_runtime.context import PluginContext as RuntimeContext
from plugin_runtime.dispatch import VALID_HOOKS as RUNTIME_HOOKS
from plugin_runtime.manifest import PluginManifest as RuntimeManifest


def register(ctx: PluginContext) -> None:
    assert isinstance(ctx, PluginContext) and RuntimeContext is PluginContext
    assert isinstance(ctx.manifest, PluginManifest) and RuntimeManifest is PluginManifest
    for hook in ("pre_tool_call", "pre_gateway_dispatch", "no_such_hook"):
        if hook in VALID_HOOKS and hook in RUNTIME_HOOKS:
            ctx.register_hook(hook, lambda **kw: None)
''', "name: typed\n")
    write_config(home, "plugins:\n  enabled: [typed]\n")
    manager = PluginManager(home=home).load()
    try:
        record = manager.record("typed")
        assert record.status == "ok", record.failure
        assert record.registered == {"hooks": ["pre_tool_call", "pre_gateway_dispatch"]}
        assert {"hermes_cli.plugins", "plugin_runtime.context", "plugin_runtime.dispatch",
                "plugin_runtime.manifest"} <= set(record.hermes_names)
    finally:
        manager.close()


def test_hermes_config_has_hermes_shape_for_the_keys_hermes_core_has(home: Path) -> None:
    make_folder_plugin(home / "plugins", "shape", '''
import json

from hermes_cli.config import load_config, read_raw_config


def register(ctx):
    def report(raw):
        config = load_config()
        model = config["model"]
        if not model["default"]:
            raise RuntimeError("no model configured")  # what a plugin written for Hermes does
        return json.dumps({"default": model["default"], "provider": model["provider"], "memory": config["memory"],
                           "raw": read_raw_config()["model"], "own": config.get("voice")})
    ctx.register_command("shape", report)
''', "name: shape\n")
    write_config(home, "plugins:\n  enabled: [shape]\nmodel:\n  provider: openrouter\n  model: acme/large\n"
                       "voice: {speaker: 3}\n")
    manager = PluginManager(home=home).load()
    try:
        assert json.loads(manager.run_command("shape")) == {
            "default": "acme/large", "provider": "openrouter", "memory": {}, "own": {"speaker": 3},
            "raw": {"provider": "openrouter", "model": "acme/large", "default": "acme/large"}}
    finally:
        manager.close()
    write_config(home, "plugins:\n  enabled: [shape]\nmodel: just-a-name\n")  # Hermes' short form
    manager = PluginManager(home=home).load()
    try:
        assert json.loads(manager.run_command("shape"))["default"] == "just-a-name"
    finally:
        manager.close()


EMITTER = '''
import json

from hermes_cli.plugins import has_hook, invoke_hook
from plugin_runtime.dispatch import ainvoke_hook, has_hook as runtime_has_hook


def emit(args, **kw):
    import asyncio

    fired = invoke_hook("on_session_end", session_id="s1", completed=True, interrupted=False, model="m",
                        platform="cli")
    again = asyncio.run(ainvoke_hook("on_session_end", session_id="s2", completed=True, interrupted=False,
                                     model="m", platform="cli"))
    return json.dumps({"has": [has_hook("on_session_end"), runtime_has_hook("subagent_stop")],
                       "fired": fired, "again": again, "none": invoke_hook("subagent_stop", parent_session_id="p")})


def register(ctx):
    ctx.register_tool("emit", "adapter", {"name": "emit", "parameters": {"type": "object"}}, emit)
'''

LISTENER = '''
def register(ctx):
    ctx.register_hook("on_session_end", lambda session_id, **kw: f"heard {session_id}")
    ctx.register_hook("on_session_end", lambda **kw: None)  # a None result is left out
    ctx.register_hook("on_session_end", lambda **kw: 1 / 0)  # a failing callback is isolated
'''


def test_hermes_module_level_invoke_hook_and_has_hook_reach_the_plugins_hooks(home: Path) -> None:
    """Published adapters fire hooks through `hermes_cli.plugins.invoke_hook` (and check `has_hook`
    first), outside any ctx: they reach the hooks of the host's plugins, Hermes' way."""
    make_folder_plugin(home / "plugins", "emitter", EMITTER, "name: emitter\n")
    make_folder_plugin(home / "plugins", "listener", LISTENER, "name: listener\n")
    write_config(home, "plugins:\n  enabled: [emitter, listener]\n")
    manager = PluginManager(home=home).load()
    try:
        result = json.loads(manager.dispatch_tool("emit", {}))
        assert result == {"has": [True, False], "fired": ["heard s1"], "again": ["heard s2"], "none": []}
        assert {"hermes_cli.plugins", "plugin_runtime.dispatch"} <= set(manager.record("emitter").hermes_names)
    finally:
        manager.close()



def test_late_2026_provider_fields_and_async_compression_defaults_are_served(home: Path) -> None:
    """A published provider passes `auth_handler` (newer Hermes' ProviderProfile); Hermes' own suite
    calls `should_prepare_async_compression` on an engine that does not define it."""
    PluginManager(home=home, discover_plugins=False).load()  # Hermes' names are served once a manager loads
    namespace: dict = {}
    exec("from providers.base import ProviderProfile\n"
         "from agent.context_engine import ContextEngine\n"
         "def handle(action, args):\n    return action == 'status'\n"
         "profile = ProviderProfile(name='late', base_url='https://late.invalid/v1', auth_handler=handle,\n"
         "                          supports_model_listing=False, model_aliases={'big': 'late-large'})\n"
         "class Plain(ContextEngine):\n"
         "    name = 'plain'\n"
         "    def update_from_response(self, usage): pass\n"
         "    def should_compress(self, prompt_tokens=None): return False\n"
         "    def compress(self, messages, current_tokens=None, focus_topic=None): return messages\n",
         namespace)
    profile = namespace["profile"]
    assert profile.auth_handler("status", None) is True and profile.supports_model_listing is False
    assert profile.model_aliases == {"big": "late-large"} and profile.hidden is False
    engine = namespace["Plain"]()
    assert engine.should_prepare_async_compression(1000, []) is False
    assert engine.prepare_async_compression([]) is None


def test_cache_media_bytes_classifies_and_caches_an_attachment_as_hermes_does(home: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    PluginManager(home=home, discover_plugins=False).load()
    monkeypatch.setenv("HERMES_HOME", str(home))
    from gateway.platforms.base import cache_media_bytes

    png = cache_media_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 20, mime_type="image/png")
    assert (png.kind, png.media_type) == ("image", "image/png") and png.path.endswith(".png")
    assert cache_media_bytes(b"not an image", default_kind="image") is None  # a nameless photo that is not one
    voice = cache_media_bytes(b"OggS voice", filename="note.ogg")
    assert (voice.kind, voice.media_type) == ("audio", "audio/ogg")
    report = cache_media_bytes(b"%PDF-1.7", filename="report.pdf")
    assert (report.kind, report.media_type, report.display_name) == ("document", "application/pdf", "report.pdf")
    assert report.context_note() == f"[document 'report.pdf' saved at: {report.path}]"
    assert Path(report.path).read_bytes() == b"%PDF-1.7"
