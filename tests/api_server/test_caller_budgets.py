"""Each caller's own budget (`budgets.caller`) through `hermes serve`: the calls of a turn asked
with `X-Hermes-User: alice` count against alice's cap, within the key that asked; once it is spent
alice gets 429 naming her, the cap and the window, and bob, under the same key, goes on. A budgets
ledger out of reach is a 503 with Retry-After (`budgets.on_store_error: closed`), not a 429."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from hermes_core.testing import Reply
from tests.helpers import hermes, llm_config
from tests.helpers.api_server import Serve


def test_a_callers_budget_holds_that_caller_alone(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "budgets:\n  caller: {requests_per_minute: 1, on_limit: refuse}\n")
    llm_server.always(Reply("ok", usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}))
    with Serve() as served:
        alice, bob = served.client(**{"X-Hermes-User": "alice"}), served.client(**{"X-Hermes-User": "bob"})
        assert alice.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "a"}])
        with pytest.raises(openai.RateLimitError) as refused:
            alice.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "b"}])
        error = refused.value.body
        assert isinstance(error, dict) and error["code"] == "budget_exceeded"
        assert error["message"].startswith("caller 'api_server:alice' is at their LLM budget requests_per_minute "
                                           "(budgets.caller.requests_per_minute): used 1 requests of 1 requests in "
                                           "the last minute"), error["message"]
        assert bob.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "c"}])
    rows = {row["plugin"]: row for row in json.loads(hermes("plugins", "usage", "--json").stdout)}
    assert (rows["caller:api_server:alice"]["requests"], rows["caller:api_server:alice"]["refusals"]) == (1, 1)
    assert (rows["caller:api_server:bob"]["tokens"], rows["caller:api_server:bob"]["refusals"]) == (15, 0)


def test_a_budgets_ledger_out_of_reach_is_a_503_naming_it(home: Path, llm_server) -> None:
    llm_config(home, llm_server.url, "budgets:\n  caller: {tokens_per_day: 100000}\n")
    (home / "llm-usage.db").write_bytes(b"not a SQLite database at all, and long enough to be read as one" * 4)
    llm_server.always("ok")
    with Serve() as served:
        with pytest.raises(openai.InternalServerError) as refused:
            served.client(**{"X-Hermes-User": "alice"}).chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "a"}])
    assert refused.value.status_code == 503 and refused.value.response.headers.get("retry-after")
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "state_unavailable"
    assert error["message"].startswith(f"the LLM usage ledger ({home / 'llm-usage.db'}) cannot be reached")
    assert llm_server.requests == []
