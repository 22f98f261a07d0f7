"""Hermes Agent's tests of asynchronous context compression, the part that runs against the names
hermes-core serves.

Upstream: repository NousResearch/hermes-agent, its asynchronous-compression tests of the agent
(`from run_agent import AIAgent`, `from agent.context_engine import ContextCompressionCandidate`).
The first test is upstream's, unchanged; the second is the candidate as upstream's tests
build it (`ContextCompressionCandidate(messages=...)`, the base filled in by the host). The others drive Hermes' `AIAgent` and its private
members (`_maybe_start_async_context_compression`, `_pending_async_context_candidate`, ...): the
behaviour they check (prepared off the turn, applied when the window still starts as it did,
discarded with a reason when it moved on) is tested through hermes-core's reference agent in
tests/hermes/test_hermes_round4.py.
"""

from agent.context_compressor import ContextCompressor
from agent.context_engine import ContextCompressionCandidate


def test_builtin_compressor_does_not_opt_into_async_preparation():
    compressor = ContextCompressor.__new__(ContextCompressor)
    assert compressor.should_prepare_async_compression(10_000, []) is False
    assert compressor.prepare_async_compression([], current_tokens=10_000) is None


def test_a_candidate_carries_only_its_messages_until_the_host_fills_its_base():
    candidate = ContextCompressionCandidate(messages=[{"role": "user", "content": "compressed"}])
    assert (candidate.base_message_count, candidate.base_digest) == (None, "")
