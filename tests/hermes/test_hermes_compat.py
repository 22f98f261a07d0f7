"""Plugins written for Hermes Agent, in the patterns the published ones use, run unchanged:
Hermes' module names are served, providers are accepted by shape, Hermes' ctx names exist.
Everything goes through the `hermes` CLI in a subprocess, as an operator would see it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import hermes, hermes_json, llm_config, make_folder_plugin, write_config

# The pattern of the published memory providers: Hermes' base class if it can be imported,
# else a stand-in, so that the package also imports outside Hermes.
GUARDED_MEMORY = """
    try:
        from agent.memory_provider import MemoryProvider, RecallStatus, is_trivial_prompt
    except ImportError:
        class MemoryProvider:
            pass
        RecallStatus = is_trivial_prompt = None

    class RecallMemory(MemoryProvider):
        name = "recall"

        def is_available(self):
            return True

        def initialize(self, session_id, **kwargs):
            self.session_id = session_id

        def get_tool_schemas(self):
            return []

        def prefetch(self, query, *, session_id=""):
            return "" if is_trivial_prompt(query) else "the user likes tea"

    def register(ctx):
        ctx.register_memory_provider(RecallMemory())
"""

GUARDED_ENGINE = """
    try:
        from agent.context_engine import ContextEngine, sanitize_memory_context
    except ImportError:
        ContextEngine = object

    class KeepAll(ContextEngine):
        @property
        def name(self):
            return "keep-all"

        def update_from_response(self, usage):
            pass

        def should_compress(self, prompt_tokens=None):
            return False

        def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
            return messages

    def register(ctx):
        ctx.register_context_engine(KeepAll())
"""

# No base class at all, every member there (hermes-local-memory's pattern).
BASELESS_MEMORY = """
    class Notes:
        name = "notes"

        def is_available(self):
            return True

        def initialize(self, session_id, **kwargs):
            pass

        def get_tool_schemas(self):
            return []

    def register(ctx):
        ctx.register_memory_provider(Notes())
"""

LACKING_MEMORY = """
    class MemoryProvider:
        pass

    class Half(MemoryProvider):
        name = "half"

        def is_available(self):
            return True

    def register(ctx):
        ctx.register_memory_provider(Half())
"""


def plugin(home: Path, name: str, code: str) -> None:
    make_folder_plugin(home / "plugins", name, code, f"name: {name}\nversion: 1.0.0\n")


def doctor_row(report: dict, plugin_id: str) -> dict:
    return next(p for p in report["plugins"] if p["id"] == plugin_id)


def test_a_guarded_memory_provider_gets_hermes_core_base_and_is_selectable(home: Path) -> None:
    plugin(home, "recall", GUARDED_MEMORY)
    write_config(home, "plugins:\n  enabled: [recall]\nmemory:\n  provider: recall\n")
    report = hermes_json("plugins", "doctor")
    row = doctor_row(report, "recall")
    assert row["status"] == "ok", row["error"]
    assert row["registered"] == {"providers": ["memory:recall"]}
    assert row["hermes_names"] == ["agent.memory_provider"]
    assert report["slots"]["memory"] == "recall" and report["problems"] == []
    text = hermes("plugins", "doctor").stdout
    assert "imports Hermes' agent.memory_provider, served by hermes-core" in " ".join(text.split())


def test_a_guarded_context_engine_loads_and_is_selectable(home: Path) -> None:
    plugin(home, "keepall", GUARDED_ENGINE)
    write_config(home, "plugins:\n  enabled: [keepall]\ncontext:\n  engine: keep-all\n")
    report = hermes_json("plugins", "doctor")
    row = doctor_row(report, "keepall")
    assert row["status"] == "ok", row["error"]
    assert row["hermes_names"] == ["agent.context_engine"]
    assert report["slots"]["context_engine"] == "keep-all" and report["problems"] == []


def test_each_plugin_is_credited_with_the_names_it_imported_itself(home: Path) -> None:
    for name, code in (("recall", GUARDED_MEMORY), ("recall2", GUARDED_MEMORY.replace('"recall"', '"recall2"')),
                       ("notes", BASELESS_MEMORY)):  # declared memory providers: enabled, all three load
        make_folder_plugin(home / "plugins", name, code, f"name: {name}\nversion: 1.0.0\nkind: memory\n")
    write_config(home, "plugins:\n  enabled: [recall, recall2, notes]\n")
    report = hermes_json("plugins", "doctor")
    assert doctor_row(report, "recall")["hermes_names"] == ["agent.memory_provider"]
    assert doctor_row(report, "recall2")["hermes_names"] == ["agent.memory_provider"]
    assert doctor_row(report, "notes")["hermes_names"] == []


def test_a_provider_without_a_base_class_is_accepted_by_its_shape(home: Path) -> None:
    plugin(home, "notes", BASELESS_MEMORY)
    write_config(home, "plugins:\n  enabled: [notes]\nmemory:\n  provider: notes\n")
    report = hermes_json("plugins", "doctor")
    assert doctor_row(report, "notes")["status"] == "ok"
    assert report["slots"]["memory"] == "notes" and report["problems"] == []


def test_a_provider_lacking_members_is_refused_naming_them_and_its_bases(home: Path) -> None:
    plugin(home, "half", LACKING_MEMORY)
    write_config(home, "plugins:\n  enabled: [half]\nmemory:\n  provider: half\n")
    row = doctor_row(hermes_json("plugins", "doctor", check=1), "half")
    assert row["status"] == "failed"
    error = row["error"]
    assert "not a MemoryProvider" in error and "lacks get_tool_schemas, initialize" in error
    assert "its bases: hermes_plugins.half.MemoryProvider" in error or "half.MemoryProvider" in error


def test_a_refused_provider_is_reported_under_the_ctx_member_the_plugin_called(home: Path) -> None:
    plugin(home, "finder", """
        class Search:
            name = "quick-search"

        def register(ctx):
            ctx.register_web_search_provider(Search())
    """)
    write_config(home, "plugins:\n  enabled: [finder]\n")
    error = doctor_row(hermes_json("plugins", "doctor", check=1), "finder")["error"]
    assert "ctx.register_web_search_provider()" in error and "lacks is_available" in error, error
    assert "register_provider(" not in error


def test_hermes_provider_names_register_in_their_slots(home: Path) -> None:
    plugin(home, "finder", """
        class Search:
            name = "quick-search"

            def is_available(self):
                return True

            def search(self, query, limit=5):
                return {"success": True, "data": {"web": []}}

        class Backend:
            name = "sandbox"

            def is_available(self):
                return True

            def create_environment(self, *, cwd, timeout, **kwargs):
                return None

            def generate(self, prompt, **kwargs):
                return {"success": False, "video": None, "error": "offline"}

        def register(ctx):
            ctx.register_web_search_provider(Search())
            ctx.register_terminal_environment_provider(Backend())
            ctx.register_video_gen_provider(Backend())
    """)
    write_config(home, "plugins:\n  enabled: [finder]\nweb_search:\n  provider: quick-search\n"
                       "terminal_environment:\n  provider: sandbox\n")
    report = hermes_json("plugins", "doctor")
    row = doctor_row(report, "finder")
    assert row["status"] == "ok", row["error"]
    assert row["registered"] == {"providers": ["web_search:quick-search", "terminal_environment:sandbox",
                                               "video_gen:sandbox"]}
    assert report["slots"]["web_search"] == "quick-search"
    assert report["slots"]["terminal_environment"] == "sandbox"
    assert report["slots"]["video_gen"] is None and report["slots"]["secret_source"] is None


def test_a_real_agent_package_wins_over_the_served_one(home: Path, site: Path) -> None:
    real = site / "agent"
    real.mkdir()
    (real / "__init__.py").write_text("")
    (real / "memory_provider.py").write_text(textwrap.dedent("""
        import abc

        class MemoryProvider(abc.ABC):
            REAL_HERMES = True

        RecallStatus = None

        def is_trivial_prompt(text):
            return False
    """))
    plugin(home, "recall", GUARDED_MEMORY + """
    import pathlib
    pathlib.Path(__file__).with_name("base.txt").write_text(MemoryProvider.__module__ + " " + str(
        getattr(MemoryProvider, "REAL_HERMES", False)))
""")
    write_config(home, "plugins:\n  enabled: [recall]\nmemory:\n  provider: recall\n")
    row = doctor_row(hermes_json("plugins", "doctor"), "recall")
    assert row["status"] == "ok", row["error"]
    assert row["hermes_names"] == []  # nothing served: the real module was imported
    assert (home / "plugins" / "recall" / "base.txt").read_text() == "agent.memory_provider True"


def test_installing_hermes_core_adds_no_hermes_top_level_package() -> None:
    """The names are served by a finder (in every interpreter, see tests/project/test_packaging.py),
    never installed as packages that would stand in a real one's way."""
    probe = ("import importlib.util, sys, hermes_core; "
             "specs = {n: importlib.util.find_spec(n) for n in ('agent', 'tools', 'hermes_cli', 'hermes_constants')}; "
             "print(sorted({type(s.loader).__name__ for s in specs.values() if s is not None}), "
             "[s.origin for s in specs.values() if s is not None and s.origin not in (None, 'built-in')])")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd="/")
    assert result.stdout.strip() == "['_HermesNames'] []"


# The pattern of memory providers that keep a client or a lock on the instance they register.
LOCKED_MEMORY = """
    import json, threading
    from pathlib import Path
    from agent.memory_provider import MemoryProvider

    LOG = Path(__file__).parent / "calls.jsonl"

    class LockedMemory(MemoryProvider):
        name = "locked"

        def __init__(self):
            self._lock = threading.Lock()
            self.turns = []

        def is_available(self):
            return True

        def initialize(self, session_id, **kwargs):
            self.session_id = session_id

        def get_tool_schemas(self):
            return []

        def system_prompt_block(self):
            return "remembered turns: %d" % len(self.turns)

        def sync_turn(self, user_content, assistant_content, *, session_id=""):
            with self._lock:
                self.turns.append(user_content)
                with LOG.open("a") as out:
                    out.write(json.dumps({"id": id(self), "turns": list(self.turns)}) + "\\n")

    def register(ctx):
        ctx.register_memory_provider(LockedMemory())
"""


def test_a_memory_instance_that_cannot_be_copied_is_used_as_registered(home: Path, llm_server) -> None:
    """Hermes uses the one instance a plugin registers: one holding a lock (which cannot be
    deep-copied per session) still gives the session its memory, through a three-turn chat. Its
    block is in the system prompt as it was when the conversation's prompt was built (once, as
    Hermes builds it), and as it is after `/reset` starts a fresh one."""
    plugin(home, "locked", LOCKED_MEMORY)
    llm_config(home, llm_server.url, "plugins:\n  enabled: [locked]\nmemory:\n  provider: locked\n")
    llm_server.always("noted")
    chat = hermes("chat", input="one\ntwo\n/reset\nthree\n/exit\n")
    assert chat.returncode == 0, chat.stderr
    assert "cannot be copied" not in chat.stderr
    calls = [json.loads(line) for line in
             (home / "plugins" / "locked" / "calls.jsonl").read_text().splitlines()]
    assert [c["turns"] for c in calls] == [["one"], ["one", "two"], ["one", "two", "three"]]
    assert len({c["id"] for c in calls}) == 1
    systems = [request.messages[0]["content"] for request in llm_server.requests]
    assert systems[0] == systems[1] and systems[0].endswith("remembered turns: 0")
    assert systems[2].endswith("remembered turns: 2")


def test_a_plugin_relying_on_a_package_hermes_installs_is_told_what_to_install(home: Path) -> None:
    """A Hermes plugin may import what Hermes Agent's environment has (fire, croniter, ...)
    without declaring it: the failure says which package and how to get it, in one line."""
    plugin(home, "cron-ish", "import fire\n\ndef register(ctx):\n    pass\n")
    plugin(home, "yaml-user", "import yaml\n\ndef register(ctx):\n    ctx.register_command('y', lambda raw: yaml.safe_dump({'a': 1}))\n")
    write_config(home, "plugins:\n  enabled: [cron-ish, yaml-user]\n")
    report = hermes_json("plugins", "doctor", check=1)
    error = doctor_row(report, "cron-ish")["error"]
    assert error.startswith("ModuleNotFoundError: needs fire (imports fire), which Hermes Agent installs "
                            "with itself and the plugin does not declare: pip install fire (in import "), error
    assert doctor_row(report, "yaml-user")["status"] == "ok"  # yaml comes with hermes-core, as with Hermes


def test_a_builtin_gives_its_tool_name_to_an_enabled_plugin_with_one_notice(home: Path) -> None:
    """hermes-core's built-ins (clock's current_time, cron's cronjob) help and never block: a
    published plugin registering a tool of the same name loads, and its tool is the one called."""
    plugin(home, "mytime", "def register(ctx):\n"
           "    ctx.register_tool('current_time', 'mytime', {'name': 'current_time', 'parameters': "
           "{'type': 'object', 'properties': {}}}, lambda args, **kw: 'my own time')\n")
    write_config(home, "plugins:\n  enabled: [mytime]\n")
    called = hermes("tools", "call", "current_time", "{}")
    assert called.stdout == "my own time\n"
    assert called.stderr.count("tool 'current_time' of plugin 'mytime' is used instead of the built-in one of "
                               "plugin 'clock'") == 1
    assert doctor_row(hermes_json("plugins", "doctor"), "mytime")["status"] == "ok"


def test_a_plugin_folder_without_register_fails_with_hermes_wording_unless_it_registered_at_import(home: Path) -> None:
    plugin(home, "empty", "VERSION = 1\n")
    plugin(home, "at-import", "from tools.registry import registry\n"
           "registry.register(name='imported_tool', toolset='at_import', schema={'name': 'imported_tool', "
           "'parameters': {'type': 'object', 'properties': {}}}, handler=lambda args, **kw: 'from import')\n")
    write_config(home, "plugins:\n  enabled: [empty, at-import]\n")
    report = hermes_json("plugins", "doctor", check=1)
    assert doctor_row(report, "empty")["error"].startswith("RegistrationError: no register() function: plugin 'empty'")
    assert doctor_row(report, "at-import")["status"] == "ok"
    assert hermes("tools", "call", "imported_tool", "{}").stdout == "from import\n"
