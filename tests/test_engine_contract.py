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
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-k", "valid_list or survive")
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
