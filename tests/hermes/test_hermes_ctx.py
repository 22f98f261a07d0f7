"""Hermes' whole `ctx`: every member exists with Hermes' signature; the ones hermes-core can
serve work (through the `hermes` CLI where an operator meets them); the ones only a gateway
or an approval UI can serve raise one clear error, or call the host that declared them."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from pathlib import Path

import pytest

from hermes_core import HostCapabilityError, PluginContext, PluginManager, redact_secrets
from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin, write_config

# Hermes' PluginContext members (hermes_cli/plugins.py, REFERENCE.md §3.5) and their parameters.
HERMES_CTX = {
    "register_tool": ["name", "toolset", "schema", "handler", "check_fn", "requires_env", "is_async", "description",
                      "emoji", "override"],
    "register_hook": ["hook_name", "callback"],
    "register_command": ["name", "handler", "description", "args_hint", "argument_mode"],
    "register_cli_command": ["name", "help", "setup_fn", "handler_fn", "description"],
    "register_context_engine": ["engine"],
    "register_memory_provider": ["provider"],
    "register_platform": ["name", "label", "adapter_factory", "check_fn", "validate_config", "required_env",
                          "install_hint", "entry_kwargs"],
    "register_image_gen_provider": ["provider"], "register_video_gen_provider": ["provider"],
    "register_web_search_provider": ["provider"], "register_browser_provider": ["provider"],
    "register_tts_provider": ["provider"], "register_transcription_provider": ["provider"],
    "register_terminal_environment_provider": ["provider"], "register_secret_source": ["source"],
    "register_dashboard_auth_provider": ["provider"],
    "register_slack_action_handler": ["action_id", "callback"],
    "register_auxiliary_task": ["key", "display_name", "description", "defaults"],
    "register_skill": ["name", "path", "description", "frontmatter"],
    "dispatch_tool": ["name", "args", "kwargs"],
    "inject_message": ["content", "role", "session_key"],
    "has_plugin": ["plugin_id"], "get_config": ["key", "default"], "set_config": ["key", "value"],
    "on_unload": ["callback"], "spawn_task": ["coro", "name"], "register_approval_transport": ["name", "present_fn"],
    "has_capability": ["capability"], "call_mcp": ["server", "tool", "arguments", "timeout"],
    "register_context_reference": ["provider"], "register_redaction_patterns": ["patterns"],
    "register_system_prompt_section": ["id", "content", "position", "max_chars"],
    "emit": ["event", "payload"], "subscribe": ["event", "callback"],
    "register_platform_handler": ["args", "kwargs"], "register_telegram_handler": ["args", "kwargs"],
    "register_middleware": ["kind", "callback"],
}
HERMES_PROPERTIES = ["manifest", "plugin_id", "llm", "state", "platform_actions", "subagent_lifecycle", "profile_name"]


@pytest.mark.parametrize("member", sorted(HERMES_CTX))
def test_every_hermes_ctx_method_exists_with_hermes_parameters(member: str) -> None:
    parameters = list(inspect.signature(getattr(PluginContext, member)).parameters)[1:]
    assert parameters == HERMES_CTX[member]


def test_every_hermes_ctx_property_exists() -> None:
    for name in HERMES_PROPERTIES:
        assert hasattr(PluginContext, name), name


def row(report: dict, plugin_id: str) -> dict:
    return next(p for p in report["plugins"] if p["id"] == plugin_id)


def enable(home: Path, name: str, code: str, extra: str = "") -> None:
    make_folder_plugin(home / "plugins", name, code, f"name: {name}\nversion: 2.1.0\ndescription: probe\n")
    write_config(home, f"plugins:\n  enabled: [{name}]\n{extra}")


GUARD = """
import argparse, json, sys

def setup(parser):
    sub = parser.add_subparsers(dest="what", required=True)
    scan = sub.add_parser("scan", help="scan a folder")
    scan.add_argument("path")
    scan.add_argument("--format", dest="report_format", choices=("text", "json"), default="text")
    sub.add_parser("boom", help="fail")

def handle(args):
    if args.what == "boom":
        raise RuntimeError("the scanner broke")
    print(json.dumps({"path": args.path, "format": args.report_format}) if args.report_format == "json"
          else "scanned " + args.path)
    return 3 if args.path == "dirty" else 0

def register(ctx):
    ctx.register_cli_command(name="guard", help="Review plugins statically", setup_fn=setup, handler_fn=handle,
                             description="Run the plugin guard")
"""


def test_an_argparse_cli_command_is_served_as_hermes_name(home: Path) -> None:
    enable(home, "guard", GUARD)
    assert json.loads(hermes("guard", "scan", "src", "--format", "json").stdout) == {"path": "src", "format": "json"}
    assert hermes("guard", "scan", "src").stdout.strip() == "scanned src"
    assert hermes("guard", "scan", "dirty", check=3).stdout.strip() == "scanned dirty"  # the int is the exit code
    usage = hermes("guard", "scan", "--format", "xml", check=2)
    assert "invalid choice: 'xml'" in usage.stderr and "usage: hermes guard scan" in usage.stderr
    assert "scan a folder" in hermes("guard", "-h").stdout
    assert "Review plugins statically" in hermes("--help").stdout
    failed = hermes("guard", "boom", check=1)
    assert failed.stderr.strip() == ("hermes: error: `hermes guard` of plugin 'guard' failed: RuntimeError: "
                                     "the scanner broke")
    assert row(hermes_json("plugins", "doctor"), "guard")["registered"] == {"cli_commands": ["guard"]}


def test_a_cli_command_may_not_take_a_name_of_the_cli_itself(home: Path) -> None:
    enable(home, "clash", """
def register(ctx):
    ctx.register_cli_command("tools", "mine", lambda parser: None, lambda args: 0)
""")
    found = row(hermes_json("plugins", "doctor", check=1), "clash")
    assert found["status"] == "failed" and "`hermes tools` is a command of hermes-core itself" in found["error"]


SETTINGS = """
import json

def register(ctx):
    def remember(raw):
        ctx.set_config("memo.last", raw)
        ctx.set_config("count", (ctx.get_config("count", 0) or 0) + 1)
        ctx.state["runs"] = ctx.state.get("runs", 0) + 1
        return json.dumps({"last": ctx.get_config("memo.last"), "runs": ctx.state["runs"],
                           "name": ctx.manifest.name, "version": ctx.manifest["version"],
                           "profile": ctx.profile_name, "self": ctx.has_plugin("memo"),
                           "other": ctx.has_plugin("nothing-here")})
    ctx.register_command("remember", remember, argument_mode="required", args_hint="<text>")
    ctx.register_command("ping", lambda raw: "pong", argument_mode="none")
"""


def test_settings_state_and_manifest_through_commands(home: Path) -> None:
    enable(home, "memo", SETTINGS, "# the operator's own note\nmodel:\n  model: gpt-4o  # keep this comment\n")
    first = json.loads(hermes("command", "remember", "tea").stdout)
    assert first == {"last": "tea", "runs": 1, "name": "memo", "version": "2.1.0", "profile": "default",
                     "self": True, "other": False}
    second = json.loads(hermes("command", "remember", "coffee").stdout)
    assert second["last"] == "coffee" and second["runs"] == 2  # the state outlives the process
    text = (home / "config.yaml").read_text()
    assert "# the operator's own note" in text and "# keep this comment" in text
    from hermes_core import PluginState, config_keys, load_config

    settings = load_config(home).read(config_keys.PLUGIN_SETTINGS, "memo")
    assert dict(settings) == {"memo": {"last": "coffee"}, "count": 2}
    assert dict(PluginState(home / "plugin-data" / "memo" / "state.json", "memo").items()) == {"runs": 2}
    assert not list(home.glob(".config.yaml.*.tmp")) and not list((home / "plugin-data" / "memo").glob("*.tmp"))


def test_argument_modes_answer_a_misuse_without_calling_the_handler(home: Path) -> None:
    enable(home, "memo", SETTINGS)
    assert hermes("command", "remember").stdout.strip() == "/remember needs arguments: /remember <text>"
    assert hermes("command", "ping", "now").stdout.strip() == "/ping takes no arguments"
    assert hermes("command", "ping").stdout.strip() == "pong"
    assert not (home / "plugin-data").exists()


def test_gateway_members_raise_one_clear_error_never_attribute_error(home: Path) -> None:
    enable(home, "vk", """
def register(ctx):
    assert not ctx.platform_actions and not ctx.subagent_lifecycle
    ctx.register_tool("vk_status", "vk", {"name": "vk_status", "parameters": {"type": "object"}},
                      lambda args, **kw: "{}")
    ctx.register_telegram_handler(lambda app: None)
""")
    found = row(hermes_json("plugins", "doctor", check=1), "vk")
    assert found["status"] == "failed" and found["registered"] == {}  # its tool was rolled back
    assert found["error"].startswith("HostCapabilityError: ctx.register_telegram_handler of plugin 'vk' needs a "
                                   "host with a messaging gateway (capability 'gateway')")
    assert "Traceback" not in hermes("plugins", "doctor", check=1).stderr


def test_a_host_that_serves_a_capability_gets_the_calls(home: Path) -> None:
    class Gateway:
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def register_platform_handler(self, plugin_id, platform, factory):
            self.calls.append((plugin_id, platform, factory()))
            return "handle"

        def platform_actions(self, plugin_id):
            return f"actions of {plugin_id}"

    gateway = Gateway()
    manager = PluginManager(home=home, discover_plugins=False)
    manager.serve("gateway", gateway)
    seen = {}

    def register(ctx):
        seen["handle"] = ctx.register_platform_handler("slack", lambda: "wired")
        seen["actions"] = ctx.platform_actions
        seen["has"] = (ctx.has_capability("gateway"), ctx.has_capability("approval"))
        with pytest.raises(HostCapabilityError, match="ctx.register_middleware of plugin 'vk' needs a host with"):
            ctx.register_middleware("tool_execution", lambda call: call())

    record = manager.load().add_plugin(register, "vk")
    assert record.status == "ok", record.failure
    assert gateway.calls == [("vk", "slack", "wired")]
    assert seen == {"handle": "handle", "actions": "actions of vk", "has": (True, False)}


def test_system_prompt_sections_go_into_the_agents_prompt_within_hermes_limits(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "persona", """
def register(ctx):
    ctx.register_system_prompt_section("tone", "Answer like a pirate.")
    ctx.register_system_prompt_section("facts", lambda: "Fact: " + "x" * 9000, position="end", max_chars=50)
    ctx.register_system_prompt_section("early", "Read this first.", position="before_memory")
""", "name: persona\n")
    llm_config(home, llm_server.url, "plugins:\n  enabled: [persona]\n")
    llm_server.reply("Arr.")
    assert hermes("run", "hello").stdout.strip() == "Arr."
    system = llm_server.requests[0].body["messages"][0]["content"]
    assert system.index("Read this first.") < system.index("Answer like a pirate.") < system.index("Fact: ")
    facts = system[system.index("Fact: "):]
    assert len(facts) == 50 and facts.endswith("…")


def test_a_section_with_a_bad_id_fails_the_load_naming_it(home: Path) -> None:
    enable(home, "persona", 'def register(ctx):\n    ctx.register_system_prompt_section("Tone!", "x")\n')
    found = row(hermes_json("plugins", "doctor", check=1), "persona")
    assert "ctx.register_system_prompt_section('Tone!')" in found["error"] and "lowercase" in found["error"]


def test_events_skills_redaction_unload_and_background_tasks(home: Path, tmp_path: Path) -> None:
    doc = tmp_path / "SKILL.md"
    doc.write_text("# Brewing\nSteep for 3 minutes.\n")
    got: list[tuple[str, object]] = []
    delivered = threading.Event()
    unloaded: list[str] = []
    started = threading.Event()
    tasks: list = []

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    def listener(ctx):
        ctx.subscribe("teapot:brewed", lambda event, payload: (got.append((event, payload)), delivered.set()))

    def teapot(ctx):
        ctx.register_skill("brewing", doc, "how to brew")
        ctx.register_redaction_patterns([r"TEA-[0-9]{6}"])
        ctx.register_auxiliary_task("tasting", display_name="Tasting", description="rate teas",
                                    defaults={"model": "small-model"})
        with pytest.raises(Exception, match="'compression' is a built-in auxiliary task"):
            ctx.register_auxiliary_task("compression", display_name="x", description="y")
        ctx.on_unload(lambda: unloaded.append("teapot"))
        ctx.state["task"] = "started"
        tasks.append(ctx.spawn_task(forever()))
        ctx.register_command("brew", lambda raw: str(ctx.emit("brewed", {"cups": int(raw)})))

    manager = PluginManager(home=home, discover_plugins=False).load()
    assert manager.add_plugin(listener, "listener").status == "ok"
    record = manager.add_plugin(teapot, "teapot")
    assert record.status == "ok", record.failure
    assert manager.commands.run("brew", "2") == "True"
    assert delivered.wait(5) and got == [("teapot:brewed", {"cups": 2})]
    assert manager.skills.get("teapot:brewing").read().startswith("# Brewing")
    assert redact_secrets("key TEA-123456 here") == "key [REDACTED] here"
    assert started.wait(5)
    (task,) = manager.auxiliary_tasks
    assert (task.key, task.plugin_id, task.defaults["model"], task.defaults["provider"]) == \
        ("tasting", "teapot", "small-model", "auto")
    assert record.registered["auxiliary_tasks"] == ["tasting"]
    with pytest.raises(Exception, match="'hermes:' namespace is the host's"):
        record.ctx.emit("hermes:boot")
    manager.remove_plugin("teapot")
    assert unloaded == ["teapot"]
    for _ in range(100):
        if tasks[0].done():
            break
        threading.Event().wait(0.05)
    assert tasks[0].cancelled()  # its background task went with it
    assert redact_secrets("key TEA-123456 here") == "key TEA-123456 here"  # its patterns went with it
    assert manager.skills.get("teapot:brewing") is None and manager.auxiliary_tasks == []
