"""The context engine contract: both built-in engines pass it, and it catches an engine that doesn't."""

from __future__ import annotations

import re

import pytest

from hermes_core.testing import ContextEngineContract
from hermes_plugins_builtin.compressor import CompressorEngine
from hermes_plugins_builtin.lcm import LcmEngine


class TestCompressorPassesTheContract(ContextEngineContract):
    def make_engine(self):
        # a small window, so that generated conversations are long enough to be compressed;
        # no summariser, so the extractive fallback is what runs
        return CompressorEngine(context_length=400, protect_last_n=4)


class TestLcmPassesTheContract(ContextEngineContract):
    def make_engine(self):
        return LcmEngine(context_length=400)


ORPHANING_ENGINE = '''
from hermes_core import ContextEngine
from hermes_core.testing import ContextEngineContract


class DropsToolCalls(ContextEngine):
    """Keeps the system prompt and every message but the assistant ones that call tools:
    their results are left answering nothing."""

    name = "drops-tool-calls"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage.get("prompt_tokens", 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return [m for m in messages if not m.get("tool_calls")]


class TestDropsToolCalls(ContextEngineContract):
    def make_engine(self):
        return DropsToolCalls()
'''


def test_the_contract_fails_an_engine_that_orphans_tool_results(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_orphaning=ORPHANING_ENGINE)
    pytester.makeini("[pytest]\n")  # its own rootdir, whatever ini file a folder above holds
    # schemathesis' pytest plugin (installed for the API server's fuzz test) prints hypothesis'
    # failing example with every value blank: the kit's report is read without it (docs/testing.md)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:schemathesis", "-q", "-k", "valid_list or survive")
    out = run.stdout.str()
    run.assert_outcomes(failed=1, passed=1)  # the system prompt and last user message do survive
    assert "FAILED test_orphaning.py::TestDropsToolCalls::test_compress_returns_a_valid_list_for_any_valid_input" in out
    assert "compress() returned an invalid message list" in out
    assert "which no earlier assistant message called" in out
    # hypothesis's smallest example: one user message and one assistant turn with a single tool call
    shown = re.search(r"(?:Falsifying example|Failing test case): test_compress_returns_a_valid_list_for_any_valid_"
                      r"input\((.*?)focus_topic=", out, re.S)
    assert shown, out
    example = shown.group(1)
    assert example.count("'tool_calls'") == 1 and example.count("'role': 'tool'") == 1
    assert example.count("'role': 'user'") == 1 and "'role': 'system'" not in example


ACME_ENGINE = '''
import json

from hypothesis import strategies as st

from hermes_core import ContextEngine
from hermes_core.testing import ContextEngineContract


class Acme(ContextEngine):
    """Correct for every call a host that validates arguments can make: `acme_grep` requires
    `query` and reads it without a default."""

    name = "acme"
    schemas = [{"name": "acme_grep", "description": "Search the stored context",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                               "required": ["query"], "additionalProperties": False}}]

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages

    def get_tool_schemas(self):
        return self.schemas

    def handle_tool_call(self, name, args, **kwargs):
        if name == "acme_grep":
            return json.dumps({"matches": [], "query": args["query"]})
        return json.dumps({"error": f"no tool {name}"})


class Chatty(Acme):
    """Answers its tool with prose, not JSON."""

    def handle_tool_call(self, name, args, **kwargs):
        return "found nothing" if name == "acme_grep" else super().handle_tool_call(name, args)


class Fancy(Acme):
    """Its parameters use `allOf`, which the kit does not generate from."""

    schemas = [{"name": "acme_grep", "parameters": {"type": "object", "properties": {
        "query": {"allOf": [{"type": "string"}, {"minLength": 1}]}}, "required": ["query"]}}]


class TestAcme(ContextEngineContract):
    def make_engine(self):
        return Acme()


class TestAcmeStrict(ContextEngineContract):
    strict_tool_arguments = True

    def make_engine(self):
        return Acme()


class TestChatty(ContextEngineContract):
    def make_engine(self):
        return Chatty()


class TestFancy(ContextEngineContract):
    def make_engine(self):
        return Fancy()


class TestFancyWithItsOwnArguments(ContextEngineContract):
    def make_engine(self):
        return Fancy()

    def tool_arguments(self, schema):
        return st.fixed_dictionaries({"query": st.text(min_size=1)})
'''


def test_tool_calls_are_checked_with_what_the_host_sends_and_strictness_is_opt_in(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_acme=ACME_ENGINE)
    pytester.makeini("[pytest]\n")  # its own rootdir, whatever ini file a folder above holds
    # schemathesis' pytest plugin (installed for the API server's fuzz test) prints hypothesis'
    # failing example with every value blank: the kit's report is read without it (docs/testing.md)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:schemathesis", "-q", "-rfE", "-k", "tool_calls")
    out = run.stdout.str()
    failed = {line.split(" ")[1] for line in out.splitlines() if line.startswith("FAILED")}
    assert failed == {
        "test_acme.py::TestAcmeStrict::test_tool_calls_return_json_strings",
        "test_acme.py::TestChatty::test_tool_calls_return_json_strings",
        "test_acme.py::TestFancy::test_tool_calls_return_json_strings",
    }, out
    assert run.parseoutcomes()["passed"] == 2  # Acme by default, Fancy with its own strategy
    # strict mode names the method, the input, what was wrong, and why such input was sent
    assert re.search(r"handle_tool_call\('acme_grep', \{.*\}\) raised KeyError: 'query' \(these arguments do not "
                     r"match the tool's parameters: strict_tool_arguments = True also sends", out), out
    assert "as a host that does not validate them (Hermes Agent) may" in out
    assert re.search(r"handle_tool_call\('acme_grep', \{'query': '.*'\}\) returned a string that is not JSON: "
                     r"'found nothing'", out), out
    assert ("cannot generate arguments for tool 'acme_grep': its parameters use `allOf` at "
            "parameters/properties/query, beyond what the contract generates; override tool_arguments(self, schema) "
            "in TestFancy") in out
