"""`AuxiliaryLlm`: the host's own LLM client for side tasks (summaries for compression, ...).

Not a plugin's client: no trust gate, routed by `auxiliary.<task>` (else the main model,
with its fallback chain), audited as `host` with the task as purpose. The host hands it to
its built-in engines; plugins use their own `ctx.llm`. With the manager's lifecycle hooks,
each attempt fires `pre_auxiliary_call` / `post_auxiliary_call` (`request_hooks`), naming
the turn it runs in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._messages import Messages
from .reply import LlmAnswer
from .request_hooks import AgentRequestHooks, AuxiliaryCallHooks, TurnIdentity
from .results import PluginLlmCompleteResult
from .structured import check_messages

if TYPE_CHECKING:
    from .._hooks.calls import LifecycleHooks
    from .host import LlmHost
    from .stream import StreamSink

__all__ = ["AgentLlm", "AuxiliaryLlm"]


class AuxiliaryLlm:
    """Chat completions for one host task, e.g. `manager.auxiliary_llm("compression")`."""

    __slots__ = ("_host", "_hooks", "task")

    def __init__(self, host: LlmHost, task: str, hooks: LifecycleHooks | None = None) -> None:
        self._host = host
        self._hooks = hooks
        self.task = task

    def __repr__(self) -> str:
        return f"<AuxiliaryLlm task={self.task!r}>"

    def _call(self, messages: Any, max_tokens: int | None, temperature: float | None, timeout: float | None) -> Any:
        from .host import Call

        hooks = self._hooks
        observer = AuxiliaryCallHooks(hooks, self.task) if hooks is not None and (
            hooks.has("pre_auxiliary_call") or hooks.has("post_auxiliary_call")) else None
        return Call("host", "auxiliary", check_messages(messages), temperature, max_tokens, timeout,
                    purpose=self.task, task=self.task, observer=observer)

    def _finish(self, answer: LlmAnswer) -> PluginLlmCompleteResult:
        return PluginLlmCompleteResult(answer.text, answer.provider, answer.model, answer.agent_id, answer.usage,
                                       {"plugin_id": "host", "purpose": self.task, "profile": None})

    def complete(
        self, messages: Messages, *, max_tokens: int | None = None, temperature: float | None = None,
        timeout: float | None = None,
    ) -> PluginLlmCompleteResult:
        """One chat completion on `auxiliary.<task>` (else the main model); raises `LlmProviderError`
        when every route fails and `LlmConfigError` when none is configured."""
        return self._host.run(self._call(messages, max_tokens, temperature, timeout), self._finish)

    async def acomplete(
        self, messages: Messages, *, max_tokens: int | None = None, temperature: float | None = None,
        timeout: float | None = None,
    ) -> PluginLlmCompleteResult:
        return await self._host.arun(self._call(messages, max_tokens, temperature, timeout), self._finish)


class AgentLlm:
    """The host's client for the agent's own conversation: the main model and its fallback
    chain, with tools. Audited as `host`, purpose `agent`.

    >>> answer = manager.agent_llm().complete(messages, tools=session.tool_schemas(), turn=turn, iteration=1)
    >>> answer.text, answer.tool_calls, answer.usage, answer.finish_reason
    """

    __slots__ = ("_host", "_hooks")

    def __init__(self, host: LlmHost, hooks: LifecycleHooks | None = None) -> None:
        self._host = host
        self._hooks = hooks

    def complete(
        self, messages: Messages, *, tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None, temperature: float | None = None, timeout: float | None = None,
        stream: StreamSink | None = None, turn: TurnIdentity | None = None, iteration: int = 1,
        user_message: Any = "", conversation_history: Messages | None = None, context_length: int = 0,
    ) -> LlmAnswer:
        """One request; the answer has `text`, `tool_calls` (OpenAI format), `usage`, who answered
        and `finish_reason`. With `stream`, the answer is streamed (from servers whose `stream` is
        not false) and `stream` sees it arrive. With `turn`, this is the turn's `iteration`th
        request: every attempt fires the request hooks (`pre_api_request`, `post_api_request` or
        `api_request_error`, `transform_api_error_classification`) with the turn's ids, its user
        message, `conversation_history` and the model's `context_length`, and the answer carries
        the request's `api_request_id`."""
        from .host import Call

        observer = None
        if turn is not None and self._hooks is not None:
            observer = AgentRequestHooks(self._hooks, turn, iteration, user_message=user_message,
                                         conversation_history=conversation_history or [], context_length=context_length)
        call = Call("host", "agent", check_messages(messages), temperature, max_tokens, timeout,
                    purpose="agent", task="agent", tools=tools or None, observer=observer, stream=stream)
        answer = self._host.run(call, lambda answer: answer)
        if observer is not None:
            answer.api_request_id = observer.api_request_id
        return answer
