"""`ctx.llm`: the gated LLM client a plugin gets, bound to its id.

>>> result = ctx.llm.complete([{"role": "user", "content": "ping"}], purpose="demo")
>>> result.text, result.provider, result.model, result.usage.total_tokens

One call each, no streaming, no tool loop. The plugin shapes the request; the host owns
provider, model, credentials, fallback, timeouts and vision routing. `provider`, `model`,
`agent_id` and `profile` are overrides the operator must grant (see `trust`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import PluginLlmInputError
from .host import Call, LlmHost
from .reply import LlmAnswer
from .results import PluginLlmCompleteResult, PluginLlmStructuredResult
from .structured import (
    Structured,
    build_messages,
    check_messages,
    check_schema,
    parse_reply,
)

__all__ = ["PluginLlm"]


def _shaping(temperature: Any, max_tokens: Any, purpose: Any) -> None:
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))):
        raise PluginLlmInputError(f"temperature must be a number, not {temperature!r}")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise PluginLlmInputError(f"max_tokens must be a positive integer, not {max_tokens!r}")
    if purpose is not None and not isinstance(purpose, str):
        raise PluginLlmInputError(f"purpose must be a string, not {type(purpose).__name__}")


def _overrides(**values: Any) -> dict[str, Any]:
    for name, value in values.items():
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise PluginLlmInputError(f"{name} must be a non-empty string or None, not {value!r}")
    return {name: None if value is None else value.strip() for name, value in values.items()}


class PluginLlm:
    """The LLM client of one plugin. Created lazily by `ctx.llm`; imports the openai SDK only
    when the first call is made."""

    __slots__ = ("_host", "plugin_id")

    def __init__(self, plugin_id: str, host: LlmHost) -> None:
        self.plugin_id = plugin_id
        self._host = host

    def __repr__(self) -> str:
        return f"<PluginLlm plugin_id={self.plugin_id!r}>"

    # -- building calls ---------------------------------------------------------------------

    def _complete_call(self, messages: Any, kw: dict[str, Any]) -> tuple[Call, Any]:
        _shaping(kw["temperature"], kw["max_tokens"], kw["purpose"])
        overrides = _overrides(provider=kw["provider"], model=kw["model"], agent_id=kw["agent_id"],
                               profile=kw["profile"])
        call = Call(self.plugin_id, "complete", check_messages(messages), kw["temperature"], kw["max_tokens"],
                    kw["timeout"], purpose=kw["purpose"], **overrides)

        def finish(answer: LlmAnswer) -> PluginLlmCompleteResult:
            return PluginLlmCompleteResult(answer.text, answer.provider, answer.model, answer.agent_id, answer.usage,
                                           self._audit(call))

        return call, finish

    def _structured_call(self, kw: dict[str, Any]) -> tuple[Call, Any]:
        _shaping(kw["temperature"], kw["max_tokens"], kw["purpose"])
        messages = build_messages(kw["instructions"], kw["input"], kw["system_prompt"])
        schema, schema_name = kw["json_schema"], kw["schema_name"]
        validator = check_schema(schema) if schema is not None else None
        if schema_name is not None and not isinstance(schema_name, str):
            raise PluginLlmInputError(f"schema_name must be a string, not {schema_name!r}")
        overrides = _overrides(provider=kw["provider"], model=kw["model"], agent_id=kw["agent_id"],
                               profile=kw["profile"])
        wish = Structured(schema, schema_name) if schema is not None or kw["json_mode"] else None
        call = Call(self.plugin_id, "structured", messages, kw["temperature"], kw["max_tokens"], kw["timeout"],
                    purpose=kw["purpose"], structured=wish, **overrides)

        def finish(answer: LlmAnswer) -> PluginLlmStructuredResult:
            parsed, content_type = parse_reply(answer.text, validator)
            return PluginLlmStructuredResult(answer.text, answer.provider, answer.model, answer.agent_id,
                                             answer.usage, {**self._audit(call), "schema_name": schema_name},
                                             parsed, content_type)

        return call, finish

    @staticmethod
    def _audit(call: Call) -> Mapping[str, Any]:
        return {"plugin_id": call.plugin_id, "purpose": call.purpose, "profile": call.profile}

    # -- the four calls -----------------------------------------------------------------------

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        provider: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        agent_id: str | None = None,
        profile: str | None = None,
        purpose: str | None = None,
    ) -> PluginLlmCompleteResult:
        """One chat completion over OpenAI-format `messages`, on the operator's provider and model."""
        call, finish = self._complete_call(messages, locals())
        return self._host.run(call, finish)  # type: ignore[no-any-return]

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        *,
        provider: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        agent_id: str | None = None,
        profile: str | None = None,
        purpose: str | None = None,
    ) -> PluginLlmCompleteResult:
        """`complete` for async code."""
        call, finish = self._complete_call(messages, locals())
        return await self._host.arun(call, finish)

    def complete_structured(
        self,
        *,
        instructions: str,
        input: list[dict[str, Any]],
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        schema_name: str | None = None,
        system_prompt: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        agent_id: str | None = None,
        profile: str | None = None,
        purpose: str | None = None,
    ) -> PluginLlmStructuredResult:
        """Ask for JSON: `parsed` holds it when the reply is JSON (and matches `json_schema`).

        Raises `ValueError` before any request for empty `instructions`, missing `input`, a
        malformed block or an invalid schema, and after it when the JSON fails the schema.
        """
        call, finish = self._structured_call(locals())
        return self._host.run(call, finish)  # type: ignore[no-any-return]

    async def acomplete_structured(
        self,
        *,
        instructions: str,
        input: list[dict[str, Any]],
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        schema_name: str | None = None,
        system_prompt: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        agent_id: str | None = None,
        profile: str | None = None,
        purpose: str | None = None,
    ) -> PluginLlmStructuredResult:
        """`complete_structured` for async code."""
        call, finish = self._structured_call(locals())
        return await self._host.arun(call, finish)
