"""Hermes' full engine and memory ABCs, driven the way the published plugins use them: an engine
subclassing `agent.context_compressor.ContextCompressor` and overriding its hooks, a memory
provider using the optional members, each through multi-turn `hermes run` against the scripted
server (fixtures written in the published plugins' patterns, not the packages themselves)."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_core import PluginManager
from hermes_core.testing import tool_call
from hermes_plugins_builtin.compressor import SUMMARY_MARK
from tests.helpers import hermes, install_dist, llm_config, make_folder_plugin

BIG = {"prompt_tokens": 3_000, "completion_tokens": 10, "total_tokens": 3_010}  # over 0.5 of a 4,000 window


def calls(home: Path, name: str) -> list[dict]:
    path = home / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run(*words: str, session: str | None = None) -> str:
    result = hermes("run", *(("--session", session) if session else ()), *words)
    return result.stderr


def last_session(home: Path) -> dict:
    (listed,) = json.loads(hermes("sessions", "list", "--json").stdout)[:1]
    return json.loads(hermes("sessions", "show", listed["id"], "--json").stdout)


# -- an engine subclassing Hermes' built-in compressor (the hermes-jev-compact pattern) -------------

TIDY = '''
import json, os

try:  # the published plugins guard the import and fall back to a stand-in
    from agent.context_compressor import ContextCompressor
except Exception:
    class ContextCompressor:
        def __init__(self, model, **kwargs):
            self.model = model

        def _prune_old_tool_results(self, messages, protect_tail_count, protect_tail_tokens=None, min_prune_chars=200):
            return messages, 0


def record(what, **details):
    with open(os.path.join(os.environ["HERMES_HOME"], "tidy.jsonl"), "a") as out:
        out.write(json.dumps({"call": what, **details}) + "\\n")


class TidyCompressor(ContextCompressor):
    """Tidies every old tool output (the base prunes only large ones) and brands the summary."""

    def __init__(self, model, **kwargs):
        super().__init__(model, **kwargs)
        record("init", base=ContextCompressor.__module__ + "." + ContextCompressor.__qualname__)

    @property
    def name(self):
        return "tidy"

    def _prune_old_tool_results(self, messages, protect_tail_count, protect_tail_tokens=None, min_prune_chars=200):
        boundary = self._prune_boundary(messages, protect_tail_count, protect_tail_tokens)
        out, count = [dict(m) for m in messages], 0
        for message in out[:boundary]:
            if message.get("role") == "tool" and message.get("content") != "[tidied]":
                message["content"], count = "[tidied]", count + 1
        record("prune", count=count, boundary=boundary)
        return out, count

    def _generate_summary(self, turns_to_summarize, focus_topic=None):
        text = super()._generate_summary(turns_to_summarize, focus_topic=focus_topic)
        record("summary", turns=len(turns_to_summarize), text=text)
        return None if text is None else "TIDY " + text


def register(ctx):
    ctx.register_context_engine(TidyCompressor(model="tidy-latest", protect_first_n=1, protect_last_n=2,
                                               summary_model_override="the-plugins-own-choice"))
'''


def test_a_plugin_subclassing_context_compressor_compresses_through_its_overrides(
        home: Path, site: Path, llm_server) -> None:
    install_dist(site, "tidy-compact", {"tidy": "tidy_engine"}, {"tidy_engine": TIDY})
    llm_config(home, llm_server.url, "  context_length: 4000\ncontext:\n  engine: tidy\nplugins:\n  enabled: [tidy]\n"
               "auxiliary:\n  compression:\n    model: operators-summariser\n")
    llm_server.reply(None, tool_calls=[tool_call("current_time", {}, call_id="c1")], usage=BIG)
    llm_server.reply("It is noon.", usage=BIG)
    run("what time is it?")  # turn 1: too short to compress
    session_id = last_session(home)["id"]
    llm_server.reply(None, tool_calls=[tool_call("current_time", {"timezone": "UTC"}, call_id="c2")], usage=BIG)
    llm_server.reply("the user asked the time twice; the clock said noon")  # the summariser's request
    llm_server.reply("Still noon.", usage=BIG)
    stderr = run("and in UTC?", session=session_id)  # turn 2: after its tool call, over the threshold
    llm_server.reply("You asked about the time.", usage=BIG)
    run("what did I ask?", session=session_id)  # turn 3: goes on from the compressed window

    records = calls(home, "tidy")
    assert {r["base"] for r in records if r["call"] == "init"} == {"hermes_plugins_builtin.compressor.ContextCompressor"}
    (prune,) = [r for r in records if r["call"] == "prune"]
    assert prune["count"] == 1  # the first call's small output: the base would have kept it
    (summary,) = [r for r in records if r["call"] == "summary"]
    assert summary["text"] == "the user asked the time twice; the clock said noon"

    summariser = llm_server.requests[3]
    assert summariser.model == "operators-summariser"  # the operator's auxiliary.compression, not the plugin's
    prompt = summariser.messages[-1]["content"]
    assert "[tool] [tidied]" in prompt and "weekday" not in prompt  # it summarised the tidied turns
    after = llm_server.requests[4].messages
    (branded,) = [m for m in after if str(m.get("content", "")).startswith(SUMMARY_MARK)]
    assert "TIDY the user asked the time twice" in branded["content"]
    assert "context compressed by tidy" in stderr
    assert llm_server.requests[5].messages[-1]["content"] == "what did I ask?"
    assert any(str(m.get("content", "")).startswith(SUMMARY_MARK) for m in llm_server.requests[5].messages)
    shown = last_session(home)
    assert [c["engine"] for c in shown["compressions"]] == ["tidy"] and len(shown["messages"]) == 10


# -- a memory provider with Hermes' optional members (the hermes-brain-memory pattern) --------------

JOURNAL = '''
import json, os

try:
    from agent.memory_provider import MemoryProvider, RecallStatus
except ImportError:
    class MemoryProvider:
        pass
    RecallStatus = None


def path(name):
    return os.path.join(os.environ["HERMES_HOME"], name)


def record(what, **details):
    with open(path("journal.jsonl"), "a") as out:
        out.write(json.dumps({"call": what, **details}) + "\\n")


class JournalProvider(MemoryProvider):
    def __init__(self):
        self._recalled = ""

    @property
    def name(self):
        return "journal"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        record("initialize", session_id=session_id, platform=kwargs.get("platform"))

    def get_tool_schemas(self):
        return []

    def on_session_switch(self, new_session_id, *, parent_session_id="", reset=False, rewound=False, **kwargs):
        record("on_session_switch", session_id=new_session_id, reset=reset)

    def on_turn_start(self, turn_number, message, **kwargs):
        record("on_turn_start", turn=turn_number, message=message, kwargs=sorted(kwargs))

    def prefetch(self, query, *, session_id=""):
        queued = path("journal-next.txt")  # what queue_prefetch gathered after the last turn
        self._recalled = open(queued).read() if os.path.exists(queued) else ""
        record("prefetch", query=query, returned=self._recalled)
        return self._recalled

    def recall_status(self):
        return RecallStatus("journal", 2) if self._recalled else None

    def queue_prefetch(self, query, *, session_id=""):
        record("queue_prefetch", query=query)
        with open(path("journal-next.txt"), "w") as out:
            out.write(f"Earlier the user said: {query}")

    def sync_turn(self, user_content, assistant_content, *, session_id="", messages=None):
        record("sync_turn", user=user_content, assistant=assistant_content,
               roles=[m["role"] for m in messages or []])


def register(ctx):
    ctx.register_memory_provider(JournalProvider())
'''


def test_a_memory_provider_gets_its_optional_members_called_over_three_turns(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins" / "memory", "journal", JOURNAL, "name: journal\n")
    llm_config(home, llm_server.url, "memory:\n  provider: journal\n")
    llm_server.reply("Hello Ana.").reply("Tea it is.").reply("You are Ana and like tea.")
    run("my name is Ana")
    session_id = last_session(home)["id"]
    second = run("I like green tea", session=session_id)
    run("who am I?", session=session_id)

    records = calls(home, "journal")
    assert [r["call"] for r in records if r["call"] in ("initialize", "on_session_switch")] == [
        "initialize", "initialize", "on_session_switch", "initialize", "on_session_switch"]
    assert {(r["session_id"], r["reset"]) for r in records if r["call"] == "on_session_switch"} == {(session_id, False)}
    starts = [r for r in records if r["call"] == "on_turn_start"]
    assert [(r["turn"], r["message"]) for r in starts] == [(1, "my name is Ana"), (2, "I like green tea"), (3, "who am I?")]
    assert starts[0]["kwargs"] == ["model", "platform", "tool_count"]
    queued = [r["query"] for r in records if r["call"] == "queue_prefetch"]
    assert queued == ["my name is Ana", "I like green tea", "who am I?"]
    prefetched = [r["returned"] for r in records if r["call"] == "prefetch"]
    assert prefetched == ["", "Earlier the user said: my name is Ana", "Earlier the user said: I like green tea"]
    assert llm_server.requests[1].messages[-1]["content"].endswith("Earlier the user said: my name is Ana")
    assert "🧠 journal — recalled 2 memories" in second
    synced = [r for r in records if r["call"] == "sync_turn"]
    assert [(r["user"], r["assistant"]) for r in synced][0] == ("my name is Ana", "Hello Ana.")
    assert [r["roles"] for r in synced] == [["user", "assistant"], ["user", "assistant"] * 2, ["user", "assistant"] * 3]
    # in order: a turn starts, recalls, and after the answer stores and queues the next recall
    order = [r["call"] for r in records if r["call"] != "initialize"][-4:]
    assert order == ["on_turn_start", "prefetch", "sync_turn", "queue_prefetch"]


NARROW = '''
import json, os

try:
    from agent.memory_provider import MemoryProvider
except ImportError:
    MemoryProvider = object


class Narrow(MemoryProvider):
    """Written for an older ABC: sync_turn and on_turn_start without the newer arguments."""

    name = "narrow"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        pass

    def get_tool_schemas(self):
        return []

    def on_turn_start(self, turn_number, message):
        self.turn = turn_number

    def sync_turn(self, user_content, assistant_content, *, session_id=""):
        with open(os.path.join(os.environ["HERMES_HOME"], "narrow.jsonl"), "a") as out:
            out.write(json.dumps({"call": "sync_turn", "turn": self.turn, "user": user_content}) + "\\n")


def register(ctx):
    ctx.register_memory_provider(Narrow())
'''


def test_a_provider_with_older_signatures_gets_only_what_it_accepts(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins" / "memory", "narrow", NARROW, "name: narrow\n")
    llm_config(home, llm_server.url, "memory:\n  provider: narrow\n")
    llm_server.reply("ok")
    run("remember nothing")
    assert calls(home, "narrow") == [{"call": "sync_turn", "turn": 1, "user": "remember nothing"}]
    with PluginManager().open_session("s1") as session:
        session.on_turn_start(1, "hi", model="m", platform="cli", tool_count=0)
        session.sync_turn("hi", "hello", messages=[{"role": "user", "content": "hi"}])
        assert session.problems == []


# -- a plain engine with the per-request and per-turn members ------------------------------------------

ROUTER = '''
import json, os
from agent.context_engine import ContextEngine


def record(what, **details):
    with open(os.path.join(os.environ["HERMES_HOME"], "router.jsonl"), "a") as out:
        out.write(json.dumps({"call": what, **details}) + "\\n")


class Router(ContextEngine):
    name = "router"
    emit_automatic_compaction_status = True

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or self.last_prompt_tokens) >= 1000

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        kept = [m for m in messages if m["role"] == "user"][-1:]
        record("compress", force=force, kept=len(kept))
        return kept

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None, budget_tokens=0):
        record("select_context", request=len(request_messages), conversation=len(conversation_messages),
               incoming=incoming_message["content"], budget=budget_tokens)
        return [request_messages[0], request_messages[-1]]  # only the system prompt and the question

    def on_turn_complete(self, messages, usage=None, **kwargs):
        record("on_turn_complete", messages=len(messages), usage=usage, **kwargs)

    def get_automatic_compaction_status_message(self, *, phase, default_message, **context):
        return f"router trimmed the window ({phase})"


def register(ctx):
    ctx.register_context_engine(Router)
'''


def test_an_engine_selects_each_requests_context_and_hears_each_turn_end(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins" / "context_engine", "router", ROUTER, "name: router\n")
    llm_config(home, llm_server.url, "context:\n  engine: router\n")
    llm_server.reply(None, tool_calls=[tool_call("current_time", {}, call_id="c1")],
                     usage={"prompt_tokens": 1500, "completion_tokens": 5, "total_tokens": 1505})
    llm_server.reply("It is noon.", usage={"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24})
    stderr = run("what time is it?")
    first, second = (r.messages for r in llm_server.requests)
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["role"] for m in second] == ["system", "user"]  # the tool round was selected away
    records = calls(home, "router")
    selects = [r for r in records if r["call"] == "select_context"]
    assert [(r["request"], r["conversation"], r["incoming"], r["budget"]) for r in selects] == [
        (2, 1, "what time is it?", 128_000), (2, 1, "what time is it?", 128_000)]
    assert [r for r in records if r["call"] == "compress"] == [{"call": "compress", "force": False, "kept": 1}]
    assert "router trimmed the window (compress)" in stderr
    (done,) = [r for r in records if r["call"] == "on_turn_complete"]
    assert done == {"call": "on_turn_complete", "messages": 2, "api_call_count": 2, "turn_exit_reason": "text_response(finish_reason=stop)",
                    "usage": {"prompt_tokens": 20, "completion_tokens": 4}}


def test_compress_with_nothing_to_do_records_no_compression(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("ok")
    chat = hermes("chat", input="hello\n/compress\n/exit\n")
    assert "compressed: 2 messages in the window" in chat.stdout
    assert last_session(home)["compressions"] == []
    assert not any(r.body.get("messages", [{}])[0].get("content", "").startswith("You compress")
                   for r in llm_server.requests)  # no summary was asked for


def test_a_manual_compress_is_forced_and_skipped_when_the_engine_has_nothing(home: Path) -> None:
    class Quiet:  # no base class at all: accepted by its shape
        name = "quiet"
        seen: list = []

        def update_from_response(self, usage): pass
        def should_compress(self, prompt_tokens=None): return False
        def has_content_to_compress(self, messages): return len(messages) > 2

        def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
            self.seen.append(force)
            return messages[-1:]

    (home / "config.yaml").write_text("context:\n  engine: quiet\n")
    manager = PluginManager()
    assert manager.add_plugin(lambda ctx: ctx.register_context_engine(Quiet()), "quiet").status == "ok"
    two = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    with manager.open_session(context_length=1000) as session:
        assert session.compress(two, force=True) is two and Quiet.seen == []
        assert session.compress(two + two, force=True) == two[-1:] and Quiet.seen == [True]
        assert session.problems == []
