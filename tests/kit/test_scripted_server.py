"""The scripted OpenAI-compatible server of the test kit, driven through the real openai SDK."""

from __future__ import annotations

import threading

import openai
import pytest

from hermes_core.testing import ScriptedServer, tool_call


def client(server: ScriptedServer, **options: object) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=server.url, max_retries=0, **options)  # type: ignore[arg-type]


def ask(server: ScriptedServer, **options: object) -> object:
    return client(server, **options).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "two words"}]
    )


def test_replies_are_served_in_order_with_counted_usage(llm_server: ScriptedServer) -> None:
    llm_server.reply("first answer").reply("second")
    one, two = ask(llm_server), ask(llm_server)
    assert one.choices[0].message.content == "first answer"  # type: ignore[attr-defined]
    assert one.usage.prompt_tokens == 2 and one.usage.completion_tokens == 2  # type: ignore[attr-defined]
    assert two.choices[0].message.content == "second"  # type: ignore[attr-defined]
    assert one.model == "m"  # type: ignore[attr-defined]


def test_requests_are_recorded_with_body_and_credential(llm_server: ScriptedServer) -> None:
    llm_server.reply("ok")
    ask(llm_server)
    [request] = llm_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.model == "m"
    assert request.messages == [{"role": "user", "content": "two words"}]
    assert request.api_key == "sk-test"


def test_tool_calls_usage_and_model_are_scripted(llm_server: ScriptedServer) -> None:
    llm_server.reply(None, tool_calls=[tool_call("current_time", {"tz": "UTC"}, "call_1")],
                     usage={"prompt_tokens": 10, "completion_tokens": 4, "cost": 0.5}, model="served-model")
    reply = ask(llm_server)
    call = reply.choices[0].message.tool_calls[0]  # type: ignore[attr-defined]
    assert (call.id, call.function.name, call.function.arguments) == ("call_1", "current_time", '{"tz": "UTC"}')
    assert reply.choices[0].finish_reason == "tool_calls"  # type: ignore[attr-defined]
    assert reply.usage.total_tokens == 14 and reply.usage.cost == 0.5  # type: ignore[attr-defined]
    assert reply.model == "served-model"  # type: ignore[attr-defined]


def test_json_replies_plain_and_fenced(llm_server: ScriptedServer) -> None:
    llm_server.reply_json({"a": 1}).reply_json({"b": 2}, fenced=True)
    assert ask(llm_server).choices[0].message.content == '{"a": 1}'  # type: ignore[attr-defined]
    assert '```json\n{"b": 2}\n```' in ask(llm_server).choices[0].message.content  # type: ignore[attr-defined]


def test_status_fault_carries_retry_after_and_error_body(llm_server: ScriptedServer) -> None:
    llm_server.fail(429, "slow down", retry_after=7)
    with pytest.raises(openai.RateLimitError) as caught:
        ask(llm_server)
    assert caught.value.response.headers["retry-after"] == "7"
    assert "slow down" in str(caught.value)


def test_delay_makes_the_client_time_out(llm_server: ScriptedServer) -> None:
    llm_server.reply("late", delay=1.0)
    with pytest.raises(openai.APITimeoutError):
        ask(llm_server, timeout=0.2)


def test_malformed_body_and_dropped_connection(llm_server: ScriptedServer) -> None:
    llm_server.malformed().drop()
    with pytest.raises((openai.APIResponseValidationError, ValueError)):
        ask(llm_server)
    with pytest.raises(openai.APIConnectionError):
        ask(llm_server)


def test_an_empty_queue_answers_500_until_a_default_is_set(llm_server: ScriptedServer) -> None:
    with pytest.raises(openai.InternalServerError, match="no reply left"):
        ask(llm_server)
    llm_server.always("default answer")
    assert ask(llm_server).choices[0].message.content == "default answer"  # type: ignore[attr-defined]
    assert ask(llm_server).choices[0].message.content == "default answer"  # type: ignore[attr-defined]
    assert llm_server.pending == 0


def test_named_base_urls_tell_providers_apart(llm_server: ScriptedServer) -> None:
    llm_server.always("ok")
    openai.OpenAI(api_key="k", base_url=llm_server.url_for("backup"), max_retries=0).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}]
    )
    assert llm_server.requests[0].path == "/backup/v1/chat/completions"


def test_models_endpoint_lists_a_model(llm_server: ScriptedServer) -> None:
    assert [m.id for m in client(llm_server).models.list()] == ["scripted-model"]


def test_a_whole_reply_can_be_held_until_the_test_lets_it_go(llm_server: ScriptedServer) -> None:
    answer, got = threading.Event(), []
    llm_server.reply("held", hold=answer)
    asking = threading.Thread(target=lambda: got.append(ask(llm_server)))
    asking.start()
    asking.join(timeout=1.0)
    assert asking.is_alive() and len(llm_server.requests) == 1 and not got  # received, not answered
    answer.set()
    asking.join(timeout=30)
    assert got[0].choices[0].message.content == "held"  # type: ignore[attr-defined]
