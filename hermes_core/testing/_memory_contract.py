"""`MemoryProviderContract`: the property checks every memory provider should pass."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ._contract_common import (  # first: a clear error when hypothesis is missing
    ToolCallChecks,
    check_tool_schemas,
    contract_settings,
    json_reply,
    no_network,
)

# isort: split
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from .._slots.context_engine import accepted_kwargs
from .strategies import memory_texts, search_queries

__all__ = ["MemoryProviderContract"]

_DECOYS = ("The weather in Paris was mild", "Meeting moved to Thursday at 10", "Prefers tabs over spaces")


def _tool_names(provider: Any) -> set[str]:
    return {str(s.get("name")) for s in provider.get_tool_schemas() or [] if isinstance(s, dict)}


class MemoryProviderContract(ToolCallChecks):
    """Subclass in a test file (its name starting with `Test`) and define `make_provider`:

    >>> class TestMyProvider(MemoryProviderContract):
    ...     def make_provider(self, tmp_path):
    ...         return MyProvider(path=tmp_path / "db")

    `tmp_path` is a fresh folder per call; the provider is then initialized with
    `hermes_home=str(tmp_path)`. Saving, searching and forgetting go through the standard
    tools `memory_save` / `memory_search` / `memory_forget`; a provider with other tools
    overrides `save`, `search` and `forget` (otherwise those checks are skipped). Tools are
    called with arguments valid against their parameters, as the host sends them
    (`strict_tool_arguments = True` adds near-misses; see `ToolCallChecks`).
    `keeps_callers_apart = True` adds the check that sessions initialized with different
    `user_id`s never see, find or forget each other's memories.
    """

    session_id = "contract-session"
    keeps_callers_apart = False

    def make_provider(self, tmp_path: Path) -> Any:
        raise NotImplementedError("define make_provider(self, tmp_path) in your MemoryProviderContract subclass")

    # -- how the checks save, search and forget (override for other tools) ----------------

    def save(self, provider: Any, text: str) -> Any:
        """Store `text`; returns its id."""
        self._needs(provider, "memory_save")
        reply = json_reply(provider.handle_tool_call("memory_save", {"content": text}), "memory_save")
        assert isinstance(reply, dict) and "id" in reply, f"memory_save returned no id: {reply!r:.300}"
        return reply["id"]

    def search(self, provider: Any, query: str) -> list[tuple[Any, str]]:
        """(id, content) of what a search for `query` finds."""
        self._needs(provider, "memory_search")
        reply = json_reply(provider.handle_tool_call("memory_search", {"query": query, "limit": 10}), "memory_search")
        assert isinstance(reply, dict) and isinstance(reply.get("results"), list), (
            f"memory_search returned no results list: {reply!r:.300}"
        )
        return [(item.get("id"), item.get("content")) for item in reply["results"]]

    def forget(self, provider: Any, memory_id: Any) -> None:
        self._needs(provider, "memory_forget")
        reply = json_reply(provider.handle_tool_call("memory_forget", {"id": memory_id}), "memory_forget")
        assert not (isinstance(reply, dict) and "error" in reply), f"memory_forget failed: {reply!r:.300}"

    @staticmethod
    def _needs(provider: Any, tool: str) -> None:
        if tool not in _tool_names(provider):
            pytest.skip(f"the provider has no {tool} tool; override save/search/forget in the contract subclass")

    # -- providers for one check ------------------------------------------------------------

    @contextmanager
    def _provider(self, folder: Path, **caller: Any) -> Iterator[Any]:
        folder.mkdir(parents=True, exist_ok=True)
        provider = self.make_provider(folder)
        assert provider.is_available() is True, "is_available() is not True where the contract runs"
        provider.initialize(self.session_id, hermes_home=str(folder), **caller)
        try:
            yield provider
        finally:
            provider.shutdown()

    @contextmanager
    def _fresh(self, tmp_path: Path) -> Iterator[Any]:
        with self._provider(Path(tempfile.mkdtemp(dir=tmp_path))) as provider:
            yield provider

    # -- the checks ------------------------------------------------------------------------

    def test_name_is_a_non_empty_string(self, tmp_path: Path) -> None:
        name = self.make_provider(tmp_path).name
        assert isinstance(name, str) and name.strip() and name == name.strip(), f"bad provider name {name!r}"

    def test_is_available_is_a_bool_and_makes_no_network_call(self, tmp_path: Path) -> None:
        provider = self.make_provider(tmp_path)
        with no_network("is_available()"):
            value = provider.is_available()
        assert isinstance(value, bool), f"is_available() returned {value!r}, not a bool"

    def test_tool_schemas_are_openai_functions_with_valid_json_schema(self, tmp_path: Path) -> None:
        with self._fresh(tmp_path) as provider:
            check_tool_schemas(provider.get_tool_schemas(), "get_tool_schemas()")

    @contract_settings
    @given(data=st.data())
    def test_tool_calls_return_json_strings(self, tmp_path: Path, data: st.DataObject) -> None:
        with self._fresh(tmp_path) as provider:
            self._check_tool_calls(provider, data)

    # The explicit examples run every time, whatever the profile: the classic ways to lose a
    # memory (case folding, search syntax in the text, non-ASCII), then hypothesis' own.
    @contract_settings
    @given(text=memory_texts())
    @example(text="Ana prefers Tabs")
    @example(text='say "NEAR(x)" AND tags:* -- (draft)')
    @example(text="naïve café 日本語 😀 e\u0301")
    def test_what_is_saved_can_be_found_by_its_own_text(self, tmp_path: Path, text: str) -> None:
        with self._fresh(tmp_path) as provider:
            for decoy in _DECOYS:
                self.save(provider, decoy)
            memory_id = self.save(provider, text)
            found = self.search(provider, text)
            assert (memory_id, text) in found, f"saved {text!r} as {memory_id!r}; searching for it found {found!r:.500}"

    @contract_settings
    @given(text=memory_texts())
    @example(text="Ana prefers Tabs")
    def test_forget_forgets(self, tmp_path: Path, text: str) -> None:
        with self._fresh(tmp_path) as provider:
            memory_id = self.save(provider, text)
            self.forget(provider, memory_id)
            found = self.search(provider, text)
            assert memory_id not in [i for i, _ in found], f"forgot {memory_id!r}, but a search still finds it"

    @contract_settings
    @given(query=search_queries())
    @example(query="(")
    @example(query='"unbalanced')
    @example(query="NEAR( AND * OR [a-")
    @example(query="\\")
    @example(query="\x00")
    @example(query="")
    def test_any_text_is_a_safe_search_query(self, tmp_path: Path, query: str) -> None:
        with self._fresh(tmp_path) as provider:
            self.save(provider, _DECOYS[0])
            if "memory_search" in _tool_names(provider):
                reply = json_reply(provider.handle_tool_call("memory_search", {"query": query}), "memory_search")
                assert isinstance(reply, dict), f"memory_search returned {reply!r:.200}"
            assert isinstance(provider.prefetch(query, session_id=self.session_id), str), "prefetch() must return str"

    @contract_settings
    @given(user=memory_texts(), assistant=st.text(max_size=200))
    def test_turns_of_any_text_are_accepted(self, tmp_path: Path, user: str, assistant: str) -> None:
        with self._fresh(tmp_path) as provider:
            provider.sync_turn(user, assistant, session_id=self.session_id)
            block = provider.system_prompt_block()
            assert isinstance(block, str), f"system_prompt_block() returned {type(block).__name__}, not str"

    @contract_settings
    @given(user=memory_texts(), assistant=st.text(max_size=200))
    def test_a_turn_driven_as_the_host_drives_it_is_accepted(self, tmp_path: Path, user: str, assistant: str) -> None:
        def call(method: Any, *args: Any, **offered: Any) -> Any:
            return method(*args, **accepted_kwargs(method, offered))

        turn = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        with self._fresh(tmp_path) as provider:
            call(provider.on_session_switch, self.session_id, parent_session_id="", reset=False)
            call(provider.on_turn_start, 1, user, model="contract-model", platform="cli", tool_count=3)
            recalled = call(provider.prefetch, user, session_id=self.session_id)
            status = call(provider.recall_status)
            call(provider.sync_turn, user, assistant, session_id=self.session_id, messages=turn)
            call(provider.queue_prefetch, user, session_id=self.session_id)
            assert isinstance(recalled, str), f"prefetch() returned {type(recalled).__name__}, not str"
            assert status is None or (isinstance(getattr(status, "provider_label", None), str)
                                      and isinstance(getattr(status, "count", None), int)), (
                f"recall_status() returned {status!r:.200}, not None or a RecallStatus")

    def test_memories_persist_across_instances(self, tmp_path: Path) -> None:
        text = "The deploy key rotates every ninety days"
        with self._provider(tmp_path / "home") as first:
            memory_id = self.save(first, text)
        with self._provider(tmp_path / "home") as second:
            assert (memory_id, text) in self.search(second, "deploy key rotation days"), (
                "a memory saved by one instance is not found by the next one on the same folder"
            )

    @contract_settings
    @given(messages=st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                                    "content": st.text(max_size=100)}), max_size=5))
    def test_session_end_and_compression_notices_are_accepted(self, tmp_path: Path, messages: list[dict[str, Any]]) -> None:
        with self._fresh(tmp_path) as provider:
            kept = provider.on_pre_compress(messages)
            assert isinstance(kept, str), f"on_pre_compress() returned {type(kept).__name__}, not str"
            provider.on_session_end(messages)

    def test_callers_are_kept_apart(self, tmp_path: Path) -> None:
        if not self.keeps_callers_apart:
            pytest.skip("set keeps_callers_apart = True to check that callers (user_id) are kept apart")
        text = "The vault combination is 31 left 17 right"
        home = tmp_path / "home"
        with self._provider(home, platform="api_server", user_id="alice") as alice:
            memory_id = self.save(alice, text)
        for caller in ({"platform": "api_server", "user_id": "bob"}, {"platform": "cli"}):
            with self._provider(home, **caller) as other:
                who = caller.get("user_id", "a session without user_id")
                assert memory_id not in [i for i, _ in self.search(other, "vault combination")], (
                    f"{who} found alice's memory")
                assert "vault combination" not in other.system_prompt_block(), (
                    f"{who}'s system prompt has alice's memory")
                assert "vault combination" not in other.prefetch("vault combination", session_id=self.session_id), (
                    f"{who}'s prefetch has alice's memory")
                if "memory_forget" in _tool_names(other):
                    other.handle_tool_call("memory_forget", {"id": memory_id})
        with self._provider(home, platform="api_server", user_id="alice") as alice:
            assert (memory_id, text) in self.search(alice, "vault combination"), (
                "alice's memory is gone after another caller's memory_forget of its id, or was never hers to find")
