"""Memory providers: the `memory` slot, the built-in SQLite/FTS5 provider, and how a session uses them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_core import (
    AgentSession,
    MemoryProvider,
    PluginManager,
    UnknownProviderError,
)
from tests.helpers import hermes, install_dist, make_folder_plugin, write_config


def call(session: AgentSession, tool: str, **args) -> dict:
    return json.loads(session.dispatch_tool(tool, args))


def db_path(home: Path) -> Path:
    return home / "memory" / "memories.db"


# -- the ABC ----------------------------------------------------------------------------------


def test_memory_provider_requires_its_four_members() -> None:
    class Partial(MemoryProvider):
        name = "partial"

        def is_available(self):
            return True

    with pytest.raises(TypeError, match="initialize"):
        Partial()


def test_optional_members_have_harmless_defaults() -> None:
    class Minimal(MemoryProvider):
        name = "minimal"

        def is_available(self):
            return True

        def initialize(self, session_id, **kwargs):
            pass

        def get_tool_schemas(self):
            return []

    provider = Minimal()
    assert provider.system_prompt_block() == "" and provider.prefetch("q", session_id="s") == ""
    assert provider.on_pre_compress([]) == ""
    assert provider.sync_turn("u", "a") is None and provider.on_session_end([]) is None and provider.shutdown() is None
    assert json.loads(provider.handle_tool_call("x", {})) == {"error": "memory provider 'minimal' has no tool 'x'"}
    # Hermes' optional members, with Hermes' defaults
    assert provider.pre_compress_checkpoint_api_version == 1
    assert provider.unavailable_reason() == "" and provider.recall_status() is None
    assert provider.get_config_schema() == [] and provider.backup_paths() == []
    for call_it in (lambda: provider.queue_prefetch("q", session_id="s"), lambda: provider.on_turn_start(1, "m", x=1),
                    lambda: provider.on_session_switch("s2", parent_session_id="s", reset=True, rewound=False, y=2),
                    lambda: provider.on_delegation("task", "result", child_session_id="c"),
                    lambda: provider.on_memory_write("add", "memory", "text", metadata={}),
                    lambda: provider.save_config({}, "/tmp"),
                    lambda: provider.sync_turn("u", "a", session_id="s", messages=[])):
        assert call_it() is None


def test_initialize_for_inspection_initializes_by_default() -> None:
    class Seen(MemoryProvider):
        name = "seen"
        calls: list = []

        def is_available(self):
            return True

        def initialize(self, session_id, **kwargs):
            self.calls.append((session_id, kwargs))

        def get_tool_schemas(self):
            return []

    Seen().initialize_for_inspection("s1", hermes_home="/h")
    assert Seen.calls == [("s1", {"hermes_home": "/h"})]


# -- the default: builtin ---------------------------------------------------------------------


def test_builtin_is_the_default_with_no_setup(home: Path) -> None:
    manager = PluginManager()
    assert manager.select("memory").name == "builtin"
    assert manager.doctor().slots["memory"] == "builtin"
    with manager.open_session("s1") as session:
        assert session.memory is not None
        names = {t["function"]["name"] for t in session.tool_schemas()}
        assert {"memory_save", "memory_search", "memory_forget", "current_time"} <= names
        assert "Nothing is saved yet" in session.system_prompt_block()
    assert not db_path(home).exists()  # nothing written until the first save


def test_save_search_forget_through_the_session(home: Path) -> None:
    with PluginManager().open_session("s1") as session:
        saved = call(session, "memory_save", content="Ana's favourite tea is genmaicha", tags=["tea", "ana"])
        assert saved == {"id": 1, "saved": True}
        assert call(session, "memory_save", content="Ana's favourite tea is genmaicha")["saved"] is False
        call(session, "memory_save", content="The staging database lives in eu-west-1")
        found = call(session, "memory_search", query="which tea does Ana like?")
        assert [r["id"] for r in found["results"]] == [1]
        assert found["results"][0]["tags"] == ["tea", "ana"]
        assert call(session, "memory_search", query="teas", limit=1)["count"] == 1  # stemming: teas ~ tea
        assert call(session, "memory_forget", id="#1") == {"id": 1, "forgotten": True}
        assert call(session, "memory_search", query="genmaicha")["count"] == 0
        assert "no memory with id 1" in call(session, "memory_forget", id=1)["error"]
        assert "must be a memory id" in call(session, "memory_forget", id="one")["error"]


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(", "tea AND", "OR", "*", "content:tea", "(x", "a - b", "\x00"])
def test_fts5_syntax_in_a_query_is_searched_as_plain_text(home: Path, query: str) -> None:
    with PluginManager().open_session() as session:
        call(session, "memory_save", content="tea AND coffee (x) content:tea a - b")
        result = call(session, "memory_search", query=query)
        assert "results" in result, result


def test_text_in_any_script_can_be_found(home: Path) -> None:
    with PluginManager().open_session() as session:
        for text in ("我喜欢绿茶", "café crème", "🙂🙂"):
            memory_id = call(session, "memory_save", content=text)["id"]
            assert memory_id in [r["id"] for r in call(session, "memory_search", query=text)["results"]]
        assert call(session, "memory_search", query="绿茶")["count"] == 1  # a substring of CJK text
        assert call(session, "memory_search", query="cafe")["count"] == 1  # diacritics folded


def test_empty_or_oversized_input_is_a_clear_error_result(home: Path) -> None:
    with PluginManager().open_session() as session:
        assert "non-empty" in call(session, "memory_save", content="   ")["error"]
        too_long = call(session, "memory_save", content="x" * 10_001)["error"]
        assert too_long.startswith("Invalid arguments for tool 'memory_save': field 'content': 'xxx")
        assert too_long.endswith("…(10003 chars) is too long") and len(too_long) < 200
        assert "query' is empty" in call(session, "memory_search", query=" ")["error"]
        assert "field 'limit'" in call(session, "memory_search", query="x", limit=0)["error"]  # schema-checked


def test_memories_persist_across_processes(home: Path) -> None:
    hermes("tools", "call", "memory_save", '{"content": "The VPN config is in vault path ops/vpn"}')
    found = json.loads(hermes("tools", "call", "memory_search", '{"query": "where is the vpn config"}').stdout)
    assert [r["content"] for r in found["results"]] == ["The VPN config is in vault path ops/vpn"]
    listed = {row["name"]: row for row in json.loads(hermes("tools", "list", "--json").stdout)}
    assert (listed["memory_save"]["toolset"], listed["memory_save"]["plugin"]) == ("memory:builtin", "memory/builtin")


WRITER = """
import json, sys
from hermes_core import PluginManager
with PluginManager().open_session() as session:
    for i in range(int(sys.argv[2])):
        result = json.loads(session.dispatch_tool("memory_save", {"content": f"note {sys.argv[1]} number {i}"}))
        assert result.get("saved") is True, result
"""


def test_two_processes_writing_at_once_lose_nothing(home: Path) -> None:
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, name, "150"], stderr=subprocess.PIPE, text=True)
               for name in ("alpha", "beta")]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    with PluginManager().open_session() as session:
        for name in ("alpha", "beta"):
            found = call(session, "memory_search", query=name, limit=50)
            assert found["count"] == 50
        block = session.system_prompt_block()
    assert "300 saved" in block


def test_a_corrupt_database_is_reported_and_left_untouched(home: Path) -> None:
    db = db_path(home)
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not sqlite\x00" * 100)
    before = db.read_bytes()
    result = hermes("tools", "call", "memory_save", '{"content": "x"}', check=1)
    error = json.loads(result.stdout)["error"]
    assert str(db) in error and "not a readable SQLite database" in error and "move it aside" in error
    with PluginManager().open_session() as session:
        assert "not a readable SQLite database" in call(session, "memory_search", query="x")["error"]
        assert session.system_prompt_block() == ""  # the host keeps going without the block...
        assert any("not a readable SQLite database" in p for p in session.problems)  # ...and says why
    assert db.read_bytes() == before


def test_system_prompt_block_is_a_short_bounded_digest(home: Path) -> None:
    with PluginManager().open_session() as session:
        for i in range(40):
            call(session, "memory_save", content=f"fact {i}: " + "long words " * 200)
        block = session.system_prompt_block()
    assert "40 saved; the latest 8" in block and "#40" in block and "#32" not in block
    assert len(block) < 2_000


def test_prefetch_brings_relevant_memories_only(home: Path) -> None:
    with PluginManager().open_session() as session:
        call(session, "memory_save", content="Deploys to production happen on Tuesdays")
        call(session, "memory_save", content="The cat is called Miso")
        context = session.prefetch("when do we deploy to production?")
        assert "Tuesdays" in context and "Miso" not in context
        assert session.prefetch("quantum chromodynamics") == ""


def test_a_trivial_message_recalls_nothing(home: Path) -> None:
    with PluginManager().open_session() as session:
        call(session, "memory_save", content="ok means the user agrees; thanks is a courtesy")
        assert "ok means" in session.prefetch("what does ok mean here?")
        assert session.prefetch("ok") == session.prefetch("thanks!") == session.prefetch("/compress") == ""


def test_sync_turn_keeps_what_the_user_asked_to_remember(home: Path) -> None:
    with PluginManager().open_session("s1") as session:
        session.sync_turn("Remember that my sister's name is Ines.\nAlso, what time is it?", "Noted! It is 10:00.")
        session.sync_turn("What's the weather like?", "Sunny.")
        found = call(session, "memory_search", query="sister name", limit=10)["results"]
    assert [(r["content"], r["tags"]) for r in found] == [("my sister's name is Ines.", ["remembered"])]


def test_memory_tools_go_through_the_lifecycle_hooks(home: Path) -> None:
    manager = PluginManager()
    seen = []

    def guard(tool_name, args, session_id):
        seen.append((tool_name, session_id))
        if "password" in args.get("content", ""):
            return {"action": "block", "message": '{"error": "not storing secrets"}'}
        return None

    manager.add_plugin(lambda ctx: ctx.register_hook("pre_tool_call", guard), "guard")
    with manager.open_session("s9") as session:
        assert call(session, "memory_save", content="the password is hunter2") == {"error": "not storing secrets"}
        assert call(session, "memory_search", query="password")["count"] == 0
    assert seen == [("memory_save", "s9"), ("memory_search", "s9")]


# -- choosing another provider ------------------------------------------------------------------

PROVIDER = """
from hermes_core import MemoryProvider

class Scratch(MemoryProvider):
    name = "scratch"
    def __init__(self):
        self.started = None
    def is_available(self):
        return True
    def initialize(self, session_id, **kwargs):
        self.started = (session_id, kwargs["hermes_home"])
    def get_tool_schemas(self):
        return [{"name": "scratch_note", "parameters": {"type": "object", "properties": {}}}]
    def handle_tool_call(self, name, args, **kwargs):
        return '{"noted": true}'
"""


def test_a_provider_from_the_memory_providers_entry_point_group(home: Path, site: Path) -> None:
    install_dist(site, "hermes-scratch", {"scratch": "hermes_scratch:Scratch"}, {"hermes_scratch": PROVIDER},
                 group="hermes_agent.memory_providers")
    listed = {row["id"]: row for row in json.loads(hermes("plugins", "list", "--json").stdout)}
    assert (listed["memory/scratch"]["kind"], listed["memory/scratch"]["enabled"]) == ("memory", False)
    write_config(home, "memory:\n  provider: scratch\n")
    manager = PluginManager()
    assert manager.select("memory").plugin_id == "memory/scratch"
    with manager.open_session("s2") as session:
        assert type(session.memory).__name__ == "Scratch" and session.memory.started == ("s2", str(home))
        names = {t["function"]["name"] for t in session.tool_schemas()}
        assert "scratch_note" in names and "memory_save" not in names  # one provider at a time
        assert call(session, "scratch_note") == {"noted": True}


def test_a_folder_provider_exporting_a_subclass(home: Path) -> None:
    make_folder_plugin(home / "plugins" / "memory", "scratch", PROVIDER)
    write_config(home, "memory:\n  provider: scratch\n")
    with PluginManager().open_session() as session:
        assert type(session.memory).__name__ == "Scratch"


def test_the_register_memory_provider_hook(home: Path) -> None:
    make_folder_plugin(home / "plugins", "mem", PROVIDER + """
from hermes_core import hookimpl
@hookimpl
def register_memory_provider(ctx):
    return Scratch
""")
    write_config(home, "plugins:\n  enabled: [mem]\nmemory:\n  provider: scratch\n")
    with PluginManager().open_session() as session:
        assert type(session.memory).__name__ == "Scratch"


def test_an_unknown_provider_is_a_loud_error(home: Path) -> None:
    write_config(home, "memory:\n  provider: honcho\n")
    with pytest.raises(UnknownProviderError, match="memory.provider is 'honcho'.*available: 'builtin'"):
        PluginManager().open_session()
    result = hermes("tools", "list", check=None)
    assert result.returncode != 0 and "memory.provider is 'honcho'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


BROKEN = """
from hermes_core import MemoryProvider

class Broken(MemoryProvider):
    name = "broken"
    def is_available(self):
        return {available!r}
    def initialize(self, session_id, **kwargs):
        {initialize}
    def get_tool_schemas(self):
        return [{{"name": "current_time", "parameters": {{"type": "object"}}}},
                {{"name": "broken_tool", "parameters": {{"type": "object"}}}}]
    def prefetch(self, query, *, session_id=""):
        raise RuntimeError("prefetch exploded")
    def system_prompt_block(self):
        return None
    def unavailable_reason(self):
        return "pip install broken-backend"
    def on_turn_start(self, turn_number, message, **kwargs):
        raise ValueError("no turns here")
    def recall_status(self):
        return "three memories"
"""


@pytest.mark.parametrize(
    ("available", "initialize", "problem"),
    [(False, "pass", "is not available here (pip install broken-backend)"),
     (True, "raise OSError('no disk')", "OSError: no disk")],
)
def test_a_provider_that_cannot_start_leaves_the_session_without_memory(
    home: Path, available: bool, initialize: str, problem: str
) -> None:
    make_folder_plugin(home / "plugins" / "memory", "broken", BROKEN.format(available=available, initialize=initialize))
    write_config(home, "memory:\n  provider: broken\n")
    with PluginManager().open_session() as session:
        assert session.memory is None and any(problem in p for p in session.problems)
        assert session.prefetch("x") == "" and "broken_tool" not in str(session.tool_schemas())


def test_a_misbehaving_provider_never_takes_the_host_down(home: Path) -> None:
    make_folder_plugin(home / "plugins" / "memory", "broken", BROKEN.format(available=True, initialize="pass"))
    write_config(home, "memory:\n  provider: broken\n")
    with PluginManager().open_session() as session:
        assert session.prefetch("x") == "" and session.system_prompt_block() == ""
        assert any("prefetch() raised RuntimeError: prefetch exploded" in p for p in session.problems)
        session.on_turn_start(1, "x")
        assert any("on_turn_start() raised ValueError: no turns here" in p for p in session.problems)
        assert session.recall_status() is None and session.recall_line() == ""  # not a RecallStatus: none shown
        # its tool named like a plugin's tool is left out; the plugin's tool still answers
        assert any("'current_time' is left out" in p for p in session.problems)
        assert "iso" in call(session, "current_time")
        assert call(session, "broken_tool") == {"error": "memory provider 'broken' has no tool 'broken_tool'"}


def test_import_of_the_kit_without_hypothesis_names_the_extra() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["hypothesis"] = None
        try:
            from hermes_core.testing import MemoryProviderContract
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "pip install 'hermes-core[testing]'" in out


# -- memories per caller ------------------------------------------------------------------------

# What hermes-core wrote before memories had an owner (schema 1).
SCHEMA_1 = """
CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '[]',
    digest TEXT NOT NULL, session_id TEXT NOT NULL DEFAULT '', created REAL NOT NULL);
CREATE INDEX memories_digest ON memories(digest);
CREATE VIRTUAL TABLE memories_fts USING fts5(content, tags, content='memories', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
END;
INSERT INTO memories(content, digest, created) VALUES ('The wifi password of the flat is hunter22', 'x', 0);
PRAGMA user_version = 1;
"""


def test_the_clis_memories_from_before_callers_had_their_own_are_still_its_own(home: Path, llm_server) -> None:
    import sqlite3

    from tests.helpers import llm_config

    db_path(home).parent.mkdir(parents=True)
    with sqlite3.connect(db_path(home)) as db:
        db.executescript(SCHEMA_1)
    llm_config(home, llm_server.url)
    llm_server.reply("It is hunter22.")
    assert hermes("run", "What is the wifi password?").stdout.strip() == "It is hunter22."
    sent = llm_server.requests[0].messages
    assert "1 saved; the all 1:" in sent[0]["content"] and "hunter22" in sent[0]["content"]
    assert "Possibly relevant memories:\n- #1: The wifi password of the flat is hunter22" in sent[-1]["content"]
    forgotten = json.loads(hermes("tools", "call", "memory_forget", '{"id": 1}').stdout)
    assert forgotten == {"id": 1, "forgotten": True}
    with sqlite3.connect(db_path(home)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2


def test_each_caller_saves_finds_and_forgets_only_their_own(home: Path) -> None:
    manager = PluginManager()
    alice = manager.open_session(platform="api_server", user_id="alice")
    bob = manager.open_session(platform="api_server", user_id="bob")
    elsewhere = manager.open_session(platform="telegram", user_id="alice")  # another platform's alice
    home_own = manager.open_session()
    try:
        mine = call(alice, "memory_save", content="Parking spot is B12")["id"]
        assert call(bob, "memory_save", content="Parking spot is B12")["saved"] is True  # bob's own copy
        alice.sync_turn("remember that my cat is Miso", "ok")
        for other in (bob, elsewhere, home_own):
            assert call(other, "memory_search", query="cat") == {"results": [], "count": 0}
            assert "Miso" not in other.system_prompt_block() and other.prefetch("my cat") == ""
            assert "no memory with id" in call(other, "memory_forget", id=mine)["error"]
        assert "2 saved" in alice.system_prompt_block() and "Miso" in alice.prefetch("what is my cat called?")
        assert "1 saved" in bob.system_prompt_block()
        assert call(alice, "memory_forget", id=mine) == {"id": mine, "forgotten": True}
        assert call(bob, "memory_search", query="parking")["count"] == 1
    finally:
        for session in (alice, bob, elsewhere, home_own):
            session.close()
