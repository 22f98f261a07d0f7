"""Hermes' plugin surface re-read for round 3 (shared/hermes/LATE-2026.md, "Round 3"): the rest of
`agent.memory_provider` (context threads, structured prefetch results, the provider's identity),
`plugin_runtime`'s api, dispatch, capabilities and compat-warning names, `PluginToolOverrideError`,
Hermes' capability ids as grants, and manifests with Hermes' fields. Each plugin is written the way
the published ones are."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_core import PluginManager
from hermes_core.agent import Agent
from hermes_core.testing import ScriptedServer
from tests.helpers import hermes, llm_config, make_folder_plugin, write_config

PROVIDER = '''
import threading
from agent.memory_provider import (MemoryPrefetchResult, MemoryObservation, MemoryProvider, RecallStatus,
                                   is_trivial_prompt, spawn_context_thread)
from gateway.session_context import get_session_env

class Recall(MemoryProvider):
    def __init__(self):
        self._ready = ""
        self._thread = None

    @property
    def name(self):
        return "recall"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        self._session = session_id

    def get_tool_schemas(self):
        return []

    def queue_prefetch(self, query, *, session_id=""):
        def work():  # in the background, with the spawner's context
            self._ready = f"remembered for {query!r} in {threading.current_thread().name}"
        self._thread = spawn_context_thread(work, name="recall-prefetch")
        self._thread.start()

    def prefetch(self, query, *, session_id=""):
        if self._thread is not None:
            self._thread.join(5)
        if is_trivial_prompt(query):
            return ""
        seen = MemoryObservation("note", "recall.note", 1, {"query": query}, provider="recall")
        return MemoryPrefetchResult(context=self._ready or "nothing yet", observations=[seen] * 20)

def register(ctx):
    ctx.register_memory_provider(Recall())
'''


def test_a_provider_with_context_threads_and_a_structured_prefetch_result(home: Path,
                                                                          llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "recall", PROVIDER, "name: recall\n")
    llm_config(home, llm_server.url, "memory:\n  provider: recall\n")
    llm_server.reply("First.").reply("Second.")
    with Agent(PluginManager()) as agent:
        agent.ask("What did we plan?")
        agent.ask("And then?")  # its prefetch: what the first turn's queued prefetch recalled
    sent = json.dumps(llm_server.requests[-1].body["messages"])
    assert "remembered for 'What did we plan?' in recall-prefetch" in sent  # the result's context, not its repr
    assert "MemoryPrefetchResult" not in sent


def test_the_memory_provider_base_answers_as_hermes_newest(home: Path) -> None:
    make_folder_plugin(home / "plugins", "base", '''
from agent.memory_provider import (CORE_MEMORY_PROVIDER_SENTINELS, MAX_MEMORY_OBSERVATIONS, MemoryPrefetchResult,
                                   MemoryProvider, ctx_bound, is_core_memory_provider)

class Quiet(MemoryProvider):
    name = "quiet"
    def is_available(self): return True
    def initialize(self, session_id, **kwargs): pass
    def get_tool_schemas(self): return []

def register(ctx):
    quiet = Quiet()
    ctx.register_command("probe", lambda raw: repr((
        quiet.identity_signature(), quiet.cache_busting_signature(),
        quiet.handle_tool_call(tool_name="nothing", args={}),
        quiet.sync_turn("u", "a", session_id="s", turn_author={"id": "1", "name": "Ann", "is_bot": False}),
        is_core_memory_provider("Built-In"), is_core_memory_provider("honcho"), "none" in CORE_MEMORY_PROVIDER_SENTINELS,
        len(MemoryPrefetchResult("c", list(range(40))).observations) == MAX_MEMORY_OBSERVATIONS,
        ctx_bound(lambda x: x + 1)(1))))
''', "name: base\nkind: standalone\n")  # declared: mentioning MemoryProvider alone would be Hermes' exclusive
    write_config(home, "plugins:\n  enabled: [base]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.run_command("probe") == repr((
            {}, None, json.dumps({"error": "memory provider 'quiet' has no tool 'nothing'"}), None,
            True, False, True, True, 2))
    finally:
        manager.close()


RUNTIME = '''
import warnings
from hermes_cli.plugins import PluginToolOverrideError as FromFacade
from plugin_runtime.api import has_hook, has_middleware, invoke_hook, invoke_middleware
from plugin_runtime.capabilities import CAPABILITY_REGISTRY, VALID_CAPABILITY_IDS, plugin_capability_granted
from plugin_runtime.compat_warning import HermesPluginCompatWarning
from plugin_runtime.context import PluginToolOverrideError
from plugin_runtime.dispatch import OBSERVER_SCHEMA_VERSION, TOOL_EXECUTION_MIDDLEWARE, VALID_MIDDLEWARE

def register(ctx):
    try:
        ctx.register_tool("current_time", "x", {"name": "current_time", "parameters": {"type": "object"}},
                          lambda args, **kw: "mine", override=True)
        took = "took it"
    except PluginToolOverrideError as exc:
        took = f"refused ({isinstance(exc, PermissionError)})"
    ctx.register_command("probe", lambda raw: repr((
        took, FromFacade is PluginToolOverrideError, issubclass(HermesPluginCompatWarning, FutureWarning),
        OBSERVER_SCHEMA_VERSION, TOOL_EXECUTION_MIDDLEWARE in VALID_MIDDLEWARE, has_middleware("tool_request"),
        invoke_middleware("tool_request", payload={}), has_hook("on_session_start"),
        sorted(VALID_CAPABILITY_IDS) == sorted(CAPABILITY_REGISTRY),
        [ctx.has_capability(c) for c in ("tools.override", "llm.model_override", "llm.provider_override")],
        plugin_capability_granted("runtime", "llm.model_override"))))
'''


def test_plugin_runtime_names_and_hermes_capability_ids_as_grants(home: Path) -> None:
    make_folder_plugin(home / "plugins", "runtime", RUNTIME, "name: runtime\n")
    make_folder_plugin(home / "plugins", "owner", '''
def register(ctx):
    ctx.register_tool("current_time", "x", {"name": "current_time", "parameters": {"type": "object"}},
                      lambda args, **kw: "owner's")
''', "name: owner\n")
    write_config(home, "plugins:\n  enabled: [owner, runtime]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.run_command("probe") == repr((
            "refused (True)", True, True, "hermes.observer.v1", True, False, [], False, True,
            [False, False, False], False))
    finally:
        manager.close()
    # The same grants by Hermes' ids, or by the older flags: either is enough.
    write_config(home, "plugins:\n  enabled: [owner, runtime]\n  entries:\n    runtime:\n"
                       "      granted_capabilities: [tools.override, llm.model_override]\n"
                       "      llm:\n        allow_provider_override: true\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.run_command("probe") == repr((
            "took it", True, True, "hermes.observer.v1", True, False, [], False, True, [True, True, True], True))
    finally:
        manager.close()


def test_a_model_override_granted_by_capability_id_reaches_the_model(home: Path, llm_server: ScriptedServer) -> None:
    make_folder_plugin(home / "plugins", "chooser", '''
def register(ctx):
    ctx.register_command("ask", lambda raw: ctx.llm.complete([{"role": "user", "content": raw}], model="big-one").text)
''', "name: chooser\n")
    config = "plugins:\n  enabled: [chooser]\n"
    llm_config(home, llm_server.url, config)
    refused = hermes("command", "ask", "hi", check=None)
    assert refused.returncode != 0 and "granted_capabilities" in refused.stderr
    llm_config(home, llm_server.url, config + "  entries:\n    chooser:\n      granted_capabilities: [llm.model_override]\n")
    llm_server.reply("From the big one.")
    assert "From the big one." in hermes("command", "ask", "hi").stdout
    assert llm_server.requests[-1].body["model"] == "big-one"


def test_a_manifest_reads_hermes_fields_and_is_made_as_hermes_makes_it(home: Path) -> None:
    make_folder_plugin(home / "plugins", "tagged", '''
from plugin_runtime.manifest import PluginManifest

def register(ctx):
    made = PluginManifest("other", version="2.0", tags=["x"])
    ctx.register_command("probe", lambda raw: repr((ctx.manifest.name, ctx.manifest.tags, ctx.manifest.emits,
        ctx.manifest.manifest_version, ctx.manifest.portable, made.name, made.version, made.tags, made.kind)))
''', "name: tagged\nversion: 1.2\n")
    write_config(home, "plugins:\n  enabled: [tagged]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.run_command("probe") == repr(("tagged", [], [], 1, False, "other", "2.0", ["x"], "standalone"))
    finally:
        manager.close()


VK_PATTERN = '''
from agent.secret_scope import get_secret
from gateway.config import Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, MessageType, SendResult, cache_media_bytes
from hermes_cli.config import get_env_value, read_raw_config, save_env_value, write_platform_config_field
from hermes_cli.plugins import PluginContext
from hermes_cli.setup import print_header, print_info, print_success, print_error, prompt, prompt_yes_no
from hermes_constants import get_hermes_home
from tools import slash_confirm
from tools.approval import resolve_gateway_approval
from tools.clarify_gateway import mark_awaiting_text, resolve_gateway_clarify


def supports_cron_delivery():
    from gateway import delivery  # a probe of an optional host contract, as the published adapter makes it
    return hasattr(BasePlatformAdapter, "_is_partial_delivery") and hasattr(delivery, "PartialDeliveryError")


class Adapter(BasePlatformAdapter):
    async def connect(self, *, is_reconnect=False):
        return True

    async def disconnect(self):
        pass

    async def send(self, chat_id, content, reply_to=None, metadata=None):
        return SendResult(success=True)

    async def get_chat_info(self, chat_id):
        return {}


def interactive_setup():
    print_header("Widget")
    print_info("Connects a widget.")
    if prompt_yes_no("Reconfigure?", default=False):
        return "reconfigured"
    return "kept"


def register(ctx):
    import asyncio
    from gateway.delivery import DeliveryTarget

    ctx.register_platform(name="widget", label="Widget", adapter_factory=Adapter, check_fn=lambda: True,
                          setup_fn=interactive_setup, required_env=["WIDGET_TOKEN"], emoji="💬",
                          max_message_length=0, pii_safe=True)
    ctx.register_command("probe", lambda raw: repr((
        supports_cron_delivery(), resolve_gateway_approval("nobody", "once"), resolve_gateway_clarify("c1", "yes"),
        mark_awaiting_text("c1"), asyncio.run(slash_confirm.resolve("k", "c1", "once")),
        DeliveryTarget.parse("widget:42:7").to_string(), interactive_setup())))
'''


def test_an_adapter_importing_hermes_interaction_modules_loads_and_registers(home: Path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NONINTERACTIVE", "1")
    make_folder_plugin(home / "plugins", "widget", VK_PATTERN, "name: widget\n")
    write_config(home, "plugins:\n  enabled: [widget]\n")
    manager = PluginManager(home=home).load()
    try:
        record = manager.record("widget")
        assert record.status == "ok", record.failure
        assert manager.platforms.get("widget") is not None
        assert manager.run_command("probe") == repr((False, 0, False, False, None, "widget:42:7", "kept"))
    finally:
        manager.close()
