"""The memory provider contract: the built-in provider passes it, and it catches providers that don't."""

from __future__ import annotations

import re

import pytest

from hermes_core.testing import MemoryProviderContract
from hermes_plugins_builtin.memory import BuiltinMemoryProvider


class TestBuiltinProviderPassesTheContract(MemoryProviderContract):
    keeps_callers_apart = True

    def make_provider(self, tmp_path):
        return BuiltinMemoryProvider()


BROKEN_PROVIDERS = '''
import json
import re
import socket

from hermes_core import MemoryProvider
from hermes_core.testing import MemoryProviderContract
from hermes_plugins_builtin.memory import TOOL_SCHEMAS, BuiltinMemoryProvider


class Lowercasing(BuiltinMemoryProvider):
    """Normalises what it stores: "Ana" comes back as "ana"."""

    def handle_tool_call(self, name, args, **kwargs):
        if name == "memory_save" and isinstance(args.get("content"), str):
            args = {**args, "content": args["content"].lower()}
        return super().handle_tool_call(name, args, **kwargs)


class RegexSearch(MemoryProvider):
    """Treats the query as a regular expression: "(" crashes it."""

    name = "regex"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        self.items = {}

    def get_tool_schemas(self):
        return TOOL_SCHEMAS

    def handle_tool_call(self, name, args, **kwargs):
        if name == "memory_save":
            self.items[len(self.items) + 1] = args["content"]
            return json.dumps({"id": len(self.items)})
        if name == "memory_search":
            found = [(i, c) for i, c in self.items.items() if re.search(args["query"], c)]
            return json.dumps({"results": [{"id": i, "content": c} for i, c in found]})
        return json.dumps({"error": "no"})


class SharedByAll(BuiltinMemoryProvider):
    """Ignores who the caller is: one pool of memories for everyone."""

    def initialize(self, session_id, **kwargs):
        kwargs.pop("user_id", None)
        super().initialize(session_id, **kwargs)


class PhonesHome(BuiltinMemoryProvider):
    def is_available(self):
        socket.create_connection(("127.0.0.1", 9), timeout=0.1)
        return True


class TestLowercasing(MemoryProviderContract):
    def make_provider(self, tmp_path):
        return Lowercasing()


class TestRegexSearch(MemoryProviderContract):
    def make_provider(self, tmp_path):
        return RegexSearch()


class TestPhonesHome(MemoryProviderContract):
    def make_provider(self, tmp_path):
        return PhonesHome()


class TestSharedByAll(MemoryProviderContract):
    keeps_callers_apart = True

    def make_provider(self, tmp_path):
        return SharedByAll()
'''


def test_the_contract_fails_broken_providers_with_hypothesis_minimal_example(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_broken=BROKEN_PROVIDERS)
    chosen = ("Lowercasing and (saved or forget) or RegexSearch and safe or PhonesHome and network "
              "or SharedByAll and callers")
    pytester.makeini("[pytest]\n")  # its own rootdir, whatever ini file a folder above holds
    # schemathesis' pytest plugin (installed for the API server's fuzz test) prints hypothesis'
    # failing example with every value blank: the kit's report is read without it (docs/testing.md)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:schemathesis", "-q", "-rfE", "-k", chosen)
    out = run.stdout.str()
    failed = {line.split(" ")[1] for line in out.splitlines() if line.startswith("FAILED")}
    assert failed == {
        "test_broken.py::TestLowercasing::test_what_is_saved_can_be_found_by_its_own_text",
        "test_broken.py::TestRegexSearch::test_any_text_is_a_safe_search_query",
        "test_broken.py::TestPhonesHome::test_is_available_is_a_bool_and_makes_no_network_call",
        "test_broken.py::TestSharedByAll::test_callers_are_kept_apart",
    }, out
    assert "bob found alice's memory" in out
    assert run.parseoutcomes()["passed"] == 1  # Lowercasing still forgets correctly
    assert "is_available() made a network call (socket.getaddrinfo ('127.0.0.1', 9" in out
    # hypothesis shrinks each failure to a smallest example and shows it
    # the wording changed across hypothesis versions; the contract's explicit examples run first
    shown = "(?:(?:Falsifying|Failing)(?: explicit)? example|Failing test case)"
    assert re.search(shown + r": test_what_is_saved_can_be_found_by_its_own_text\(", out)
    examples = re.findall(r"text='([^'\n]*)',", out)  # shrunk to 'A' or to another cased letter, such as 'ǅ'
    assert any(c.lower() != c for text in examples for c in text), "the minimal example needs an upper-case letter"
    assert re.search(shown + r": test_any_text_is_a_safe_search_query\(", out)
    assert "re.error" in out or "PatternError" in out
