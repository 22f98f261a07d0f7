"""Hermes Agent's `tests/agent/test_memory_provider.py`: its tests of the `MemoryProvider` ABC,
run against the `agent.memory_provider` hermes-core serves.

Upstream: repository NousResearch/hermes-agent, file tests/agent/test_memory_provider.py, commit
015e865f820234a20be8790c3dc68feb6f5f8a4d. The provider fixture and the ABC tests are upstream's,
assertions unedited. Not ported: the file's other classes (TestMemoryManager,
TestPluginMemoryDiscovery, TestUserInstalledProviderDiscovery, TestUserInstalledProviderCli,
TestEntryPointMemoryProviderDiscovery, TestSequentialDispatchRouting and the setup-wizard
tests), which test Hermes' own host (`agent.memory_manager.MemoryManager`, `plugins.memory`'s
loader, `tools.skills_tool`, `hermes_cli.memory_setup`): modules hermes-core does not serve,
since its own session and discovery do that work (tests/engines, tests/hermes).
"""

import json

import pytest

from agent.memory_provider import MemoryProvider

# ---------------------------------------------------------------------------
# Concrete test provider
# ---------------------------------------------------------------------------


class FakeMemoryProvider(MemoryProvider):
    """Minimal concrete provider for testing."""

    def __init__(self, name="fake", available=True, tools=None):
        self._name = name
        self._available = available
        self._tools = tools or []
        self.initialized = False
        self.synced_turns = []
        self.prefetch_queries = []
        self.queued_prefetches = []
        self.turn_starts = []
        self.session_end_called = False
        self.pre_compress_called = False
        self.memory_writes = []
        self.shutdown_called = False
        self._prefetch_result = ""
        self._prompt_block = ""

    @property
    def name(self) -> str:
        return self._name

    def is_available(self) -> bool:
        return self._available

    def initialize(self, session_id, **kwargs):
        self.initialized = True
        self._init_kwargs = {"session_id": session_id, **kwargs}

    def system_prompt_block(self) -> str:
        return self._prompt_block

    def prefetch(self, query, *, session_id=""):
        self.prefetch_queries.append(query)
        return self._prefetch_result

    def queue_prefetch(self, query, *, session_id=""):
        self.queued_prefetches.append(query)

    def sync_turn(self, user_content, assistant_content, *, session_id=""):
        self.synced_turns.append((user_content, assistant_content))

    def get_tool_schemas(self):
        return self._tools

    def handle_tool_call(self, tool_name, args, **kwargs):
        return json.dumps({"handled": tool_name, "args": args})

    def shutdown(self):
        self.shutdown_called = True

    def on_turn_start(self, turn_number, message):
        self.turn_starts.append((turn_number, message))

    def on_session_end(self, messages):
        self.session_end_called = True

    def on_pre_compress(self, messages):
        self.pre_compress_called = True

    def on_memory_write(self, action, target, content):
        self.memory_writes.append((action, target, content))


# ---------------------------------------------------------------------------
# MemoryProvider ABC tests
# ---------------------------------------------------------------------------


class TestMemoryProviderABC:
    def test_cannot_instantiate_abstract(self):
        """ABC cannot be instantiated directly."""
        with pytest.raises(TypeError):
            MemoryProvider()

    def test_concrete_provider_works(self):
        """Concrete implementation can be instantiated."""
        p = FakeMemoryProvider()
        assert p.name == "fake"
        assert p.is_available()

    def test_default_optional_hooks_are_noop(self):
        """Optional hooks have default no-op implementations."""
        p = FakeMemoryProvider()
        # These should not raise
        p.on_turn_start(1, "hello")
        p.on_session_end([])
        p.on_pre_compress([])
        p.on_memory_write("add", "memory", "test")
        p.queue_prefetch("query")
        p.sync_turn("user", "assistant")
        p.initialize_for_inspection("inspect")
        p.shutdown()
