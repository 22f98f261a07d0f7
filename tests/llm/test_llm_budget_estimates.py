"""What a budgeted call reserves: its prompt counted in tokens (about a third of its characters, one
more for each character outside ASCII, three quarters of one for each character of base64, a hash or
a key, never more than its bytes), not in bytes, and at least what real tokenizers count for such
text; its answer bounded by its max_tokens, or without one by twice the longest answer of the
conversation so far."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_core import PluginLlmBudgetError
from hermes_core.testing import Reply, ScriptedServer
from tests.helpers import llm_config, plugin_ctx

budget = importlib.import_module("hermes_core._llm.budget")


@given(st.text())
def test_a_text_is_counted_at_most_at_its_bytes_and_at_least_at_a_third_of_its_characters(text: str) -> None:
    tokens = budget.text_tokens(text)
    assert tokens <= len(text.encode())
    assert tokens >= min(len(text.encode()), -(-len(text) // 3))


def test_prose_is_counted_at_a_third_of_its_characters_and_wide_characters_one_each() -> None:
    assert budget.text_tokens("The cat sat on the mat with the hat.") == 12  # 36 characters
    assert budget.text_tokens("你好世界") == 2 + 4  # a third of 4, and one for each: never above its 12 bytes
    assert budget.text_tokens("") == 0


# Real token counts, the most any of four tokenizers counted: measured with the tokenizers of
# benchmarks/bench_budget_estimates.py (tiktoken 0.14.0 with litellm 1.110.2's bundled cl100k_base and
# o200k_base; tokenizers 0.23 with its Claude 2 and DeepSeek files), counts in that order in each comment.
DENSE = {
    # base64 of 96 random bytes (cl100k_base 93, o200k_base 88, Claude 2 92, DeepSeek 90)
    "UvImZaYMEtKJGF2VDuiBNgkWb2sRPReNbA/TkB/yOaGglfIPk5VlDPk4C47bIkprJIoekk6P0K4uGpSSozBfGIy2EJAPnjR/rohtxlB3lex0XEw/"
    "yy6yxz4Uk0yGfuBX": 93,
    # two SHA-256 hex digests (78, 79, 80, 80)
    "8cfde6efdfc4ed5ab1f6acbbd1ba49bf31932f84d0a4c090eb41c7d151e8b180 "
    "0d45f5fd462b8c70bffb10021ac1bcff3f58f29b1faf7568595095427d42812c": 80,
    # an API key (34, 33, 33, 35)
    "sk-ucSmEHgaKwVJ7faC9qEwjky40UVsWmflzdE1F8ResqEDusTp": 35,
}


@pytest.mark.parametrize("text", list(DENSE), ids=["base64", "hashes", "key"])
def test_a_prompt_of_base64_hashes_or_keys_reserves_at_least_the_tokens_it_really_is(
        home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", "1795000000")
    llm_config(home, llm_server.url, "plugins:\n  entries:\n    probe:\n      llm_budget: {tokens_per_day: 10}\n")
    with pytest.raises(PluginLlmBudgetError) as refused:
        plugin_ctx(home).llm.complete([{"role": "user", "content": text}], max_tokens=1)
    found = re.search(r"this call may take up to ([\d,]+) tokens", str(refused.value))
    assert found is not None, str(refused.value)
    assert int(found[1].replace(",", "")) >= DENSE[text] + 1  # a third of its characters was about half of it
    assert not llm_server.requests


def test_identifiers_paths_and_prose_are_not_counted_as_dense() -> None:
    assert budget.text_tokens("see hermes_core/_llm/counters.py and budgets.reservation_ttl") == 20  # a third
    assert budget.text_tokens("self._client.register_script(RESERVE)") == 13


def test_a_prompt_is_counted_in_tokens_not_in_the_bytes_of_its_json() -> None:
    text = "Summarise the following report in three bullet points. " * 40
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}]
    counted = budget.prompt_tokens(messages, None)
    assert counted < len(json.dumps(messages)) / 2.5  # the bytes were the old bound: 2.9x this
    assert counted >= len(text) / 3


def test_an_answer_is_bounded_by_max_tokens_or_by_the_conversations_answers() -> None:
    asked = [{"role": "user", "content": "hi"}]
    assert budget.answer_tokens(asked, 200) == 200
    assert budget.answer_tokens(asked, None) == budget.RESERVED_ANSWER_TOKENS  # nothing to go by yet
    short = [*asked, {"role": "assistant", "content": "Hello! " * 10}, {"role": "user", "content": "and?"}]
    assert budget.answer_tokens(short, None) == budget.ANSWER_FLOOR
    long = [*asked, {"role": "assistant", "content": "word " * 600}, {"role": "user", "content": "and?"}]
    assert budget.answer_tokens(long, None) == 2 * 1000
    assert budget.answer_tokens(long, 50) == 50  # max_tokens asked wins


def test_a_call_without_max_tokens_reserves_what_the_conversations_answers_cost(
        home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_LLM_BUDGET_NOW", "1795000000")
    llm_config(home, llm_server.url, "plugins:\n  entries:\n    probe:\n      llm_budget: {tokens_per_day: 1000}\n")
    llm_server.always(Reply("ok", usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}))
    llm = plugin_ctx(home).llm
    with pytest.raises(PluginLlmBudgetError, match=r"this call may take up to 4,1\d\d tokens"):
        llm.complete([{"role": "user", "content": "hi"}])  # no answer yet: 4,096 for it
    conversation = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
                    {"role": "user", "content": "tell me a joke"}]
    assert llm.complete(conversation).text == "ok"  # 256 for its answer: it fits
    assert len(llm_server.requests) == 1
