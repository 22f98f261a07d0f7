"""Context engines: the ABC, selection through the slot, the session's engine calls, and the
built-in `compressor` and `lcm` engines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_core import (
    Config,
    ContextEngine,
    PluginManager,
    UnknownProviderError,
    message_problems,
    repair_tool_pairing,
    split_for_compression,
)
from hermes_plugins_builtin.compressor import SUMMARY_MARK, CompressorEngine
from hermes_plugins_builtin.lcm import LcmEngine
from tests.helpers import hermes, llm_config, make_folder_plugin, write_config


def turn(n: int, *, tool: bool = False, big: int = 0) -> list[dict]:
    """A user message and the assistant's answer; with `tool`, an assistant tool call and its result."""
    out: list[dict] = [{"role": "user", "content": f"question {n} about topic{n}"}]
    if tool:
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"n": n})}}]})
        out.append({"role": "tool", "tool_call_id": f"c{n}", "content": ("x" * big) if big else f"result {n}"})
    out.append({"role": "assistant", "content": f"answer {n}"})
    return out


def conversation(turns: int, **kwargs) -> list[dict]:
    messages = [{"role": "system", "content": "You are a test agent."}]
    for n in range(turns):
        messages += turn(n, tool=n % 2 == 1, **kwargs)
    return messages


# -- the ABC ------------------------------------------------------------------------------------


class Minimal(ContextEngine):
    """Never calls super().__init__(): the class-level counters must do."""

    name = "minimal"

    def __init__(self):
        self.seen = []

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or self.last_prompt_tokens) > 100

    def compress(self, messages, current_tokens=None):  # an older signature: no focus_topic
        self.seen.append(current_tokens)
        return messages[:1] + messages[-1:]


def test_the_abc_requires_name_update_should_compress_and_compress() -> None:
    class Partial(ContextEngine):
        name = "partial"

        def update_from_response(self, usage):
            pass

    with pytest.raises(TypeError, match="compress"):
        Partial()


def test_defaults_without_super_init() -> None:
    engine = Minimal()
    assert (engine.last_prompt_tokens, engine.compression_count, engine.threshold_tokens) == (0, 0, 0)
    engine.update_model("m", 10_000)  # Hermes' default for any engine: 0.75 of the window
    assert (engine.context_length, engine.threshold_tokens) == (10_000, 7_500)
    engine.last_prompt_tokens = 50_000  # more than the window: the status still says 100 %
    assert engine.get_status()["usage_percent"] == 100.0
    engine.on_session_reset()
    assert engine.last_prompt_tokens == 0 and engine.get_status()["usage_percent"] == 0.0
    assert engine.get_tool_schemas() == [] and engine.should_compress_preflight([]) is False
    assert json.loads(engine.handle_tool_call("x", {})) == {"error": "context engine 'minimal' has no tool 'x'"}


def test_optional_members_have_hermes_defaults() -> None:
    engine, messages = Minimal(), conversation(3)
    assert (ContextEngine.threshold_percent, ContextEngine.protect_first_n, ContextEngine.protect_last_n) == (0.75, 3, 6)
    engine.last_prompt_tokens = 500
    assert engine.should_compress_info() == (True, None) and engine.should_compress_info(10) == (False, None)
    assert engine.prune_tool_results_only(messages, 10) == (messages, 0)
    assert engine.select_context(messages, conversation_messages=messages, incoming_message=None, budget_tokens=9) is None
    assert engine.on_turn_complete(messages, usage=None, interrupted=True) is None
    assert engine.pending_compression_operation(messages) is None
    assert engine.should_defer_preflight_to_real_usage(10**6) is False
    assert engine.has_content_to_compress(messages) is True
    assert engine.get_automatic_compaction_status_message(phase="compress", default_message="done") == "done"
    engine.emit_automatic_compaction_status = False
    assert engine.get_automatic_compaction_status_message(phase="compress", default_message="done") is None
    engine.last_prompt_tokens = -1  # Hermes' "compressed, no usage seen yet"
    assert engine.get_status()["last_prompt_tokens"] == 0


def test_model_thresholds_pick_the_longest_match_and_fall_back_to_the_configured_percent() -> None:
    engine = Minimal()
    engine.threshold_percent = 0.5
    engine.model_thresholds = {"claude": 0.6, "claude-3-opus": 0.7, "openrouter:claude": 0.65, "llama3:8b": 0.9}
    engine.update_model("anthropic/claude-3-opus", 1000)
    assert engine.threshold_tokens == 700
    engine.update_model("anthropic/claude-3-haiku", 1000, provider="openrouter")
    assert engine.threshold_tokens == 650  # a provider-scoped key beats a bare key of the same length
    engine.update_model("llama3:8b", 1000, provider="ollama")
    assert engine.threshold_tokens == 900  # a model name with a colon is a bare key
    engine.update_model("gpt-4o", 1000)
    assert engine.threshold_tokens == 500  # no match: the percent configured before the first switch


def test_an_engine_whose_optional_members_misbehave_never_breaks_a_request(home: Path) -> None:
    class Wayward(Minimal):
        name = "wayward"

        def select_context(self, request_messages, **kwargs):
            return [{"role": "tool", "tool_call_id": "nope", "content": "x"}]

        def on_turn_complete(self, messages, usage=None, **kwargs):
            raise RuntimeError("turn bookkeeping failed")

        def prune_tool_results_only(self, messages, current_tokens=None):
            return "not a pair"

    write_config(home, "context:\n  engine: wayward\n")
    manager = PluginManager()
    assert manager.add_plugin(lambda ctx: ctx.register_context_engine(Wayward()), "wayward").status == "ok"
    request = conversation(2)
    with manager.open_session() as session:
        assert session.select_context(request, request) is request
        session.on_turn_complete(request)
        window = request + turn(9, tool=True)[:3]
        assert session.before_request(window) is window
    assert any("select_context() returned an invalid message list" in p for p in session.problems)
    assert any("on_turn_complete() raised RuntimeError: turn bookkeeping failed" in p for p in session.problems)


# -- the helpers every engine uses ----------------------------------------------------------------


def test_message_validity_and_repair() -> None:
    messages = conversation(4)
    assert message_problems(messages) == []
    orphan = [m for m in messages if not (m["role"] == "assistant" and m.get("tool_calls"))]
    assert any("which no earlier assistant message called" in p for p in message_problems(orphan))
    lost = [m for m in messages if m["role"] != "tool"]
    assert any("has no result" in p for p in message_problems(lost))
    for broken in (orphan, lost):
        repaired = repair_tool_pairing(broken)
        assert message_problems(repaired) == []
    repaired = repair_tool_pairing(lost)
    stub = next(m for m in repaired if m["role"] == "tool")
    assert repaired[repaired.index(stub) - 1]["tool_calls"][0]["id"] == stub["tool_call_id"]
    assert "no result" in stub["content"]


def test_split_never_separates_a_tool_call_from_its_results() -> None:
    messages = conversation(10)
    for first in range(0, 8):
        for last in range(0, 30):
            head_end, tail_start = split_for_compression(messages, first, last)
            for cut in (head_end, tail_start):
                assert cut >= len(messages) or messages[cut]["role"] != "tool"
            last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
            assert tail_start <= last_user or head_end >= tail_start


# -- selection and the session --------------------------------------------------------------------


def test_compressor_is_the_default_and_unknown_names_are_loud(home: Path) -> None:
    with PluginManager().open_session() as session:
        assert type(session.context_engine).__name__ == "ContextCompressor"
        assert session.status()["context_length"] == 128_000
    write_config(home, "context:\n  engine: nope\n")
    with pytest.raises(UnknownProviderError, match="context.engine is 'nope'.*available: 'compressor', 'lcm'"):
        PluginManager().open_session()


def test_each_session_gets_its_own_engine(home: Path) -> None:
    manager = PluginManager()
    one, two = manager.open_session("a"), manager.open_session("b")
    assert one.context_engine is not two.context_engine
    one.after_response({"prompt_tokens": 10})
    assert two.context_engine.last_prompt_tokens == 0


FOLDER_ENGINE = '''
from hermes_core import ContextEngine

class TruncateEngine(ContextEngine):
    """Written as the seed page describes: a folder with plugin.yaml exporting a subclass."""

    @property
    def name(self):
        return "truncate"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or self.last_prompt_tokens) >= 1000

    def compress(self, messages, current_tokens=None):
        self.compression_count += 1
        return messages[:1] + messages[-1:]
'''


def test_a_folder_engine_written_as_the_seed_page_describes(home: Path) -> None:
    make_folder_plugin(home / "plugins" / "context_engine", "truncate", FOLDER_ENGINE,
                       "name: truncate\ndescription: keeps the first and the last message\n")
    write_config(home, "context:\n  engine: truncate\n")
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    with PluginManager().open_session() as session:
        assert session.before_request(messages) is messages  # under the threshold: untouched
        session.after_response({"prompt_tokens": 1500, "completion_tokens": 5})
        assert session.before_request(messages) == [messages[0], messages[-1]]
        assert session.context_engine.compression_count == 1  # compress got only the kwargs it takes
        session.reset()
        assert session.context_engine.last_prompt_tokens == 0 and session.context_engine.compression_count == 0


def test_the_hook_and_ctx_registration_feed_the_slot(home: Path) -> None:
    make_folder_plugin(home / "plugins", "engines", FOLDER_ENGINE + '''
from hermes_core import hookimpl

@hookimpl
def register_context_engine(ctx):
    return TruncateEngine
''')
    write_config(home, "plugins:\n  enabled: [engines]\ncontext:\n  engine: truncate\n")
    with PluginManager().open_session() as session:
        assert session.context_engine.name == "truncate"
    manager = PluginManager(discover_plugins=False, config=Config({"context": {"engine": "minimal"}}))
    manager.add_plugin(lambda ctx: ctx.register_context_engine(Minimal()), "minimal-plugin")  # an instance
    with manager.open_session() as session:
        assert isinstance(session.context_engine, Minimal)


class Orphaning(Minimal):
    name = "orphaning"

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return [m for m in messages if not m.get("tool_calls")]  # drops calls, keeps their results


class Raising(Minimal):
    name = "raising"

    def compress(self, messages, current_tokens=None, focus_topic=None):
        raise RuntimeError("engine bug")


@pytest.mark.parametrize(("engine", "outcome"), [(Orphaning, "repaired its tool pairing"), (Raising, "engine bug")])
def test_the_session_never_sends_an_invalid_list(home: Path, engine: type, outcome: str) -> None:
    manager = PluginManager(discover_plugins=False, config=Config({"context": {"engine": engine.name}}))
    manager.add_plugin(lambda ctx: ctx.register_context_engine(engine), "p")
    messages = conversation(6)
    with manager.open_session() as session:
        result = session.compress(messages)
        assert message_problems(result) == []
        assert any(outcome in p for p in session.problems)


def test_lcm_tools_join_the_tool_list_while_lcm_is_active(home: Path) -> None:
    default = {row["name"] for row in json.loads(hermes("tools", "list", "--json").stdout)}
    assert "lcm_grep" not in default
    write_config(home, "context:\n  engine: lcm\n")
    rows = {row["name"]: row for row in json.loads(hermes("tools", "list", "--json").stdout)}
    assert (rows["lcm_grep"]["toolset"], rows["lcm_grep"]["plugin"]) == ("context_engine:lcm", "context_engine/lcm")
    assert "lcm_expand" in rows
    listed = {row["id"]: row for row in json.loads(hermes("plugins", "list", "--json").stdout)}
    assert listed["context_engine/lcm"]["kind"] == "context_engine"
    assert json.loads(hermes("plugins", "doctor", "--json").stdout)["slots"]["context_engine"] == "lcm"


# -- the built-in compressor ------------------------------------------------------------------------


def compressor(**kwargs) -> CompressorEngine:
    return CompressorEngine(**{"context_length": 2_000, "protect_first_n": 3, "protect_last_n": 6, **kwargs})


def test_compressor_keeps_head_and_tail_and_summarises_the_middle(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("- the user asked about topics 0-7\n- lookups returned results")
    messages = conversation(12)
    with PluginManager().open_session(context_length=500) as session:
        assert session.context_engine.auxiliary is not None  # the host's summariser, for the built-in
        result = session.compress(messages, focus_topic="topic3")
    assert message_problems(result) == []
    assert result[:4] == messages[:4]  # the system prompt + protect_first_n (3) messages
    summary = result[4]
    assert summary["content"].startswith(SUMMARY_MARK) and "topics 0-7" in summary["content"]
    neighbours = (result[3]["role"], result[5]["role"])
    assert neighbours[0] != neighbours[1] or summary["role"] != neighbours[0]  # roles alternate where they can
    tail = result[5:]
    assert tail == messages[-len(tail):] and len(tail) >= 20  # protect_last_n: 20, untouched
    assert tail[0]["role"] != "tool"  # the cut did not separate a call from its result
    prompt = llm_server.requests[0].body["messages"][1]["content"]
    assert "Focus on: topic3" in prompt and "question 5 about topic5" in prompt
    assert "question 0" not in prompt and "question 1 " not in prompt  # the head is kept, not summarised


def test_a_second_pass_updates_the_previous_summary(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("first summary: topics 0-7").reply("updated summary: topics 0-15")
    with PluginManager().open_session(context_length=500) as session:
        once = session.compress(conversation(12))
        twice = session.compress(once + conversation(8)[1:])
    second_prompt = llm_server.requests[1].body["messages"][1]["content"]
    assert "The summary so far" in second_prompt and "first summary: topics 0-7" in second_prompt
    summaries = [m for m in twice if str(m.get("content", "")).startswith(SUMMARY_MARK)]
    assert len(summaries) == 1 and "updated summary" in summaries[0]["content"]


def test_the_summariser_route_is_auxiliary_compression(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "auxiliary:\n  compression:\n    model: cheap-summariser\n")
    llm_server.reply("summary")
    with PluginManager().open_session(context_length=500) as session:
        session.compress(conversation(12))
    assert llm_server.requests[0].body["model"] == "cheap-summariser"
    log = (home / "logs" / "agent.log").read_text()
    assert "plugin=host call=auxiliary" in log and "purpose=compression" in log


def test_when_the_summariser_fails_the_middle_is_kept_extractively(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.fail(503, "summariser down")
    with PluginManager().open_session(context_length=500) as session:
        result = session.compress(conversation(12))
        status = session.status()
    summary = result[4]["content"]
    assert "The summariser failed" in summary and "LlmProviderError" in summary
    assert "question 5 about topic5" in summary  # the middle is still there, in brief
    assert status["last_summary_failure"].startswith("LlmProviderError")
    assert message_problems(result) == []


def test_old_large_tool_outputs_are_pruned_first(home: Path) -> None:
    engine = compressor(context_length=20_000)  # pruning alone brings it under the target
    messages = conversation(12, big=5_000)
    result = engine.compress(messages)
    assert len(result) == len(messages) and message_problems(result) == []
    pruned = [m for m in result if m["role"] == "tool" and "removed by compression" in m["content"]]
    kept = [m for m in result[-6:] if m["role"] == "tool"]
    assert pruned and all(len(m["content"]) == 5_000 for m in kept)  # the tail keeps its outputs


def test_nothing_to_compress_returns_the_list_unchanged() -> None:
    messages = conversation(2)
    assert compressor().compress(messages) == messages


def test_should_compress_follows_the_threshold(home: Path) -> None:
    write_config(home, "compression:\n  threshold: 0.25\n")
    with PluginManager().open_session(context_length=10_000) as session:
        engine = session.context_engine
        assert engine.threshold_tokens == 2_500
        session.after_response({"prompt_tokens": 2_499, "completion_tokens": 1})
        assert not session.should_compress([]) and engine.last_total_tokens == 2_500
        session.after_response({"input_tokens": 2_500, "output_tokens": 3})  # Anthropic's names
        assert session.should_compress([])


# -- lcm ---------------------------------------------------------------------------------------------


def lcm_session(home: Path, session_id: str = "s1"):
    write_config(home, "context:\n  engine: lcm\nlcm:\n  protect_last_n: 6\n")
    return PluginManager().open_session(session_id, context_length=2_000)


def call(session, tool: str, **args) -> dict:
    return json.loads(session.dispatch_tool(tool, args))


def test_lcm_stores_the_middle_whole_and_brings_it_back(home: Path) -> None:
    messages = conversation(12, big=3_000)
    with lcm_session(home) as session:
        result = session.compress(messages)
        assert message_problems(result) == [] and result[:3] == messages[:3]
        node = result[3]
        assert node["content"].startswith("[lcm node 1 · level 0 · messages #1–#")
        hits = call(session, "lcm_grep", query="topic5")["results"]
        assert hits and hits[0]["node_id"] == 1 and "[topic5]" in hits[0]["snippet"]
        expanded = call(session, "lcm_expand", node_id=1)
        stored = [entry["message"] for entry in expanded["messages"]]
        assert stored == messages[3: 3 + len(stored)]  # whole: contents, tool calls, ids
        assert "error" in call(session, "lcm_expand", node_id=99)
    assert (home / "lcm" / "lcm.db").is_file()


def test_lcm_builds_summaries_of_summaries_as_the_conversation_grows(home: Path) -> None:
    messages = conversation(6)
    with lcm_session(home) as session:
        for n in range(6, 60, 6):  # a long conversation, compressed after every few turns
            messages = session.compress(messages + conversation(n + 6)[1 + 3 * n:])
            assert message_problems(messages) == []
        nodes = [m for m in messages if str(m.get("content", "")).startswith("[lcm node ")]
        assert 1 <= len(nodes) <= 4  # the window stays small
        top = json.loads(session.dispatch_tool("lcm_expand", {"node_id": int(nodes[0]["content"].split()[2])}))
        assert top["level"] >= 1 and top["children"]  # a parent node, pointing at its children
        assert top["messages"][0]["seq"] == 1 and top["total"] > len(top["messages"]) - 1
        assert call(session, "lcm_grep", query="topic7")["count"] >= 1  # old turns stay searchable
        assert session.status()["nodes"] > len(nodes)


RESUME = """
import json, sys
from hermes_core import PluginManager
with PluginManager().open_session("long-chat", context_length=2000) as session:
    print(json.dumps(json.loads(session.dispatch_tool("lcm_grep", {"query": sys.argv[1]}))))
"""


def test_lcm_state_survives_session_end_and_a_new_process(home: Path) -> None:
    with lcm_session(home, "long-chat") as session:
        session.compress(conversation(12))
    result = subprocess.run([sys.executable, "-c", RESUME, "topic4"], capture_output=True, text=True, timeout=60)
    hits = json.loads(result.stdout)["results"]
    assert hits and hits[0]["node_id"] == 1
    with lcm_session(home, "other-chat") as other:  # sessions do not see each other's store
        assert call(other, "lcm_grep", query="topic4")["count"] == 0


def test_lcm_as_a_plain_engine_without_a_host(tmp_path: Path) -> None:
    engine = LcmEngine(context_length=2_000, path=tmp_path / "lcm.db")
    engine.on_session_start("s")
    result = engine.compress(conversation(12))
    assert message_problems(result) == [] and engine.compression_count == 1
    assert json.loads(engine.handle_tool_call("lcm_grep", {"query": "topic5"}))["count"] >= 1


@pytest.mark.fires("on_session_start", "on_session_finalize")
def test_a_session_fires_the_plugins_session_hooks_and_the_default_session_does_not(home: Path) -> None:
    manager = PluginManager()
    heard = []
    manager.add_plugin(lambda ctx: [
        ctx.register_hook("on_session_start", lambda session_id, model: heard.append(("start", session_id, model))),
        ctx.register_hook("on_session_reset", lambda session_id, reason: heard.append(("reset", session_id, reason))),
        ctx.register_hook("on_session_finalize", lambda session_id, reason: heard.append(("final", session_id, reason))),
    ], "listener")
    manager.tool_infos()
    manager.dispatch_tool("current_time", {})
    manager.close()
    assert heard == []  # listing and calling tools is not a conversation
    with manager.open_session("s7", model="m1") as session:
        session.reset()
        session.close([{"role": "user", "content": "bye"}])
    assert heard == [("start", "s7", "m1"), ("final", "s7", "session_boundary"), ("reset", "s7", "new_session"),
                     ("start", "s7", "m1"), ("final", "s7", "shutdown")]


class Unbuildable(Minimal):
    name = "unbuildable"

    def __init__(self):
        raise OSError("no model file")


def test_an_engine_that_cannot_be_created_leaves_the_session_without_it(home: Path) -> None:
    manager = PluginManager(discover_plugins=False, config=Config({"context": {"engine": "unbuildable"}}))
    manager.add_plugin(lambda ctx: ctx.register_context_engine(Unbuildable), "p")
    with manager.open_session() as session:
        assert session.context_engine is None
        assert any("OSError: no model file" in p for p in session.problems)
        messages = conversation(3)
        assert session.before_request(messages) is messages
