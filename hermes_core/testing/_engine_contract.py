"""`ContextEngineContract`: the property checks every context engine should pass."""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._contract_common import (  # first: a clear error when hypothesis is missing
    ToolCallChecks,
    check_tool_schemas,
    contract_settings,
)

# isort: split
from hypothesis import given
from hypothesis import strategies as st

from .._messages import estimate_tokens, message_problems
from .._slots.context_engine import ContextEngine, accepted_kwargs, compress_kwargs
from .strategies import message_lists, usage_dicts

__all__ = ["ContextEngineContract"]

_TOKENS = st.integers(0, 10_000_000)


def _last_user(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((m for m in reversed(messages) if m.get("role") == "user"), None)


class ContextEngineContract(ToolCallChecks):
    """Subclass in a test file (its name starting with `Test`) and define `make_engine`:

    >>> class TestMyEngine(ContextEngineContract):
    ...     def make_engine(self):
    ...         return MyEngine()

    Each check starts the engine with `on_session_start(session_id, hermes_home=<a fresh
    temporary folder>, model=...)` and ends it with `on_session_end`. `compress` and the
    optional members (`prune_tool_results_only`, `select_context`, `has_content_to_compress`,
    `on_turn_complete`) are called the way the host calls them: with only the keyword
    arguments their signatures accept.
    Tools are called with arguments valid against their parameters, as the host sends them
    (`strict_tool_arguments = True` adds near-misses; see `ToolCallChecks`). A violation fails
    with the smallest example hypothesis found.
    """

    session_id = "contract-session"

    def make_engine(self) -> Any:
        raise NotImplementedError("define make_engine(self) in your ContextEngineContract subclass")

    @contextmanager
    def _engine(self) -> Iterator[Any]:
        folder = tempfile.mkdtemp(prefix="hermes-contract-")
        engine = self.make_engine()
        engine.on_session_start(self.session_id, hermes_home=folder, model="contract-model", platform="test")
        try:
            yield engine
        finally:
            engine.on_session_end(self.session_id, [])
            shutil.rmtree(folder, ignore_errors=True)

    @staticmethod
    def _compress(engine: Any, messages: list[dict[str, Any]], focus_topic: str | None = None,
                  force: bool = False) -> Any:
        offered = {"current_tokens": estimate_tokens(messages), "focus_topic": focus_topic, "force": force,
                   "memory_context": ""}
        return engine.compress(copy.deepcopy(messages), **compress_kwargs(engine, offered))

    @staticmethod
    def _call(engine: Any, member: str, *args: Any, **offered: Any) -> Any:
        method = getattr(engine, member)
        return method(*args, **accepted_kwargs(method, offered))

    # -- the checks ------------------------------------------------------------------------

    def test_is_a_context_engine_with_a_name(self) -> None:
        engine = self.make_engine()
        assert isinstance(engine, ContextEngine), f"{type(engine).__name__} is not a hermes_core.ContextEngine"
        assert isinstance(engine.name, str) and engine.name.strip() == engine.name != "", f"bad name {engine.name!r}"

    @contract_settings
    @given(messages=message_lists(), focus_topic=st.one_of(st.none(), st.text(max_size=30)))
    def test_compress_returns_a_valid_list_for_any_valid_input(
        self, messages: list[dict[str, Any]], focus_topic: str | None
    ) -> None:
        original = copy.deepcopy(messages)
        with self._engine() as engine:
            result = self._compress(engine, messages, focus_topic)
        problems = message_problems(result)
        assert not problems, f"compress() returned an invalid message list: {problems}"
        assert messages == original, "compress() changed the list it was given"

    @contract_settings
    @given(messages=message_lists())
    def test_the_system_prompt_and_the_last_user_message_survive(self, messages: list[dict[str, Any]]) -> None:
        with self._engine() as engine:
            result = self._compress(engine, messages)
        if messages[0].get("role") == "system":
            assert result and result[0] == messages[0], "the system prompt is not the first message any more"
        assert _last_user(result) == _last_user(messages), "the last user message is not the last user message any more"

    @contract_settings
    @given(first=message_lists(min_turns=10), more=message_lists(max_turns=12))
    def test_compressing_again_after_more_turns_stays_valid(
        self, first: list[dict[str, Any]], more: list[dict[str, Any]]
    ) -> None:
        later = [m for m in more if m.get("role") != "system"]
        for m in later:  # the second batch continues the first: its tool call ids must be new
            for call in m.get("tool_calls") or []:
                call["id"] = "later_" + call["id"]
            if m.get("role") == "tool":
                m["tool_call_id"] = "later_" + m["tool_call_id"]
        with self._engine() as engine:
            once = self._compress(engine, first)
            twice = self._compress(engine, once + later)
        problems = message_problems(twice)
        assert not problems, f"a second compress() returned an invalid message list: {problems}"
        assert _last_user(twice) == _last_user(once + later)

    @contract_settings
    @given(usage=usage_dicts())
    def test_counters_and_status_follow_usage(self, usage: dict[str, Any]) -> None:
        with self._engine() as engine:
            engine.update_from_response(usage)
            counters = [engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens]
            assert all(isinstance(c, int) and c >= 0 for c in counters), f"counters after {usage}: {counters}"
            if "prompt_tokens" in usage:
                assert engine.last_prompt_tokens == usage["prompt_tokens"]
            status = engine.get_status()
            assert isinstance(status, dict), "get_status() must return a dict"
            percent = status.get("usage_percent")
            assert isinstance(percent, (int, float)) and 0 <= percent <= 100, f"usage_percent {percent!r}"

    @contract_settings
    @given(a=_TOKENS, b=_TOKENS)
    def test_should_compress_is_monotone_in_tokens(self, a: int, b: int) -> None:
        low, high = min(a, b), max(a, b)
        with self._engine() as engine:
            at_low, at_high = engine.should_compress(low), engine.should_compress(high)
        assert isinstance(at_low, bool) and isinstance(at_high, bool), "should_compress() must return a bool"
        assert at_high or not at_low, f"should_compress({low}) is True but should_compress({high}) is False"

    @contract_settings
    @given(small=st.integers(1_000, 100_000), extra=st.integers(0, 1_000_000))
    def test_update_model_recomputes_the_threshold(self, small: int, extra: int) -> None:
        with self._engine() as engine:
            engine.update_model("contract-small", small)
            first = (engine.context_length, engine.threshold_tokens)
            engine.update_model("contract-large", small + extra)
            second = (engine.context_length, engine.threshold_tokens)
        assert first[0] == small and second[0] == small + extra, "update_model() must set context_length"
        assert 0 <= first[1] <= second[1] <= second[0], f"thresholds {first[1]} then {second[1]} for {first[0]}, {second[0]}"

    @contract_settings
    @given(usage=usage_dicts(), messages=message_lists())
    def test_reset_zeroes_the_counters(self, usage: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        with self._engine() as engine:
            engine.update_from_response(usage)
            self._compress(engine, messages)
            engine.on_session_reset()
            counters = (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens,
                        engine.compression_count)
        assert counters == (0, 0, 0, 0), f"after on_session_reset(): {counters}"

    @contract_settings
    @given(messages=message_lists(), tokens=_TOKENS)
    def test_per_request_members_answer_with_usable_lists(self, messages: list[dict[str, Any]], tokens: int) -> None:
        original = copy.deepcopy(messages)
        with self._engine() as engine:
            pruned = self._call(engine, "prune_tool_results_only", copy.deepcopy(messages), current_tokens=tokens)
            selected = self._call(engine, "select_context", copy.deepcopy(messages),
                                  conversation_messages=copy.deepcopy(messages),
                                  incoming_message=copy.deepcopy(_last_user(messages)), budget_tokens=tokens)
            has_content = self._call(engine, "has_content_to_compress", copy.deepcopy(messages))
            self._call(engine, "on_turn_complete", copy.deepcopy(messages),
                       usage={"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens},
                       api_call_count=1, turn_exit_reason="final_answer")
        assert isinstance(pruned, tuple) and len(pruned) == 2 and isinstance(pruned[1], int) and pruned[1] >= 0, (
            f"prune_tool_results_only() must return (messages, count), not {pruned!r:.200}")
        assert not message_problems(pruned[0]), f"prune_tool_results_only() broke the list: {message_problems(pruned[0])}"
        assert _last_user(pruned[0]) == _last_user(messages), "prune_tool_results_only() changed the last user message"
        assert selected is None or not message_problems(selected), (
            f"select_context() returned an invalid message list: {message_problems(selected)}")
        assert isinstance(has_content, bool), f"has_content_to_compress() returned {has_content!r}, not a bool"
        assert messages == original, "an optional member changed the list it was given"

    @contract_settings
    @given(messages=message_lists(min_turns=4))
    def test_a_forced_manual_compress_stays_valid(self, messages: list[dict[str, Any]]) -> None:
        with self._engine() as engine:
            result = self._compress(engine, messages, focus_topic="the latest question", force=True)
        problems = message_problems(result)
        assert not problems, f"compress(force=True) returned an invalid message list: {problems}"
        assert _last_user(result) == _last_user(messages), "compress(force=True) lost the last user message"

    def test_tool_schemas_are_valid_json_schema(self) -> None:
        with self._engine() as engine:
            check_tool_schemas(engine.get_tool_schemas(), "get_tool_schemas()")

    @contract_settings
    @given(data=st.data())
    def test_tool_calls_return_json_strings(self, data: st.DataObject) -> None:
        with self._engine() as engine:
            self._check_tool_calls(engine, data)
