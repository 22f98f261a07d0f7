"""`AuxiliaryLlm`: the host's own LLM client for side tasks (summaries for compression, ...).

Not a plugin's client: no trust gate, routed by `auxiliary.<task>` (else the main model,
with its fallback chain), audited as `host` with the task as purpose. The host hands it to
its built-in engines; plugins use their own `ctx.llm`. With the manager's lifecycle hooks,
each attempt fires `pre_auxiliary_call` / `post_auxiliary_call` (`request_hooks`), naming
the turn it runs in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .reply import Answer
from .request_hooks import AuxiliaryCallHooks
from .results import PluginLlmCompleteResult
from .structured import check_messages

if TYPE_CHECKING:
    from .._hooks.calls import LifecycleHooks
    from .host import AttemptObserver, LlmHost
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

    def _finish(self, answer: Answer) -> PluginLlmCompleteResult:
        return PluginLlmCompleteResult(answer.text, answer.provider, answer.model, answer.agent_id, answer.usage,
                                       {"plugin_id": "host", "purpose": self.task, "profile": None})

    def complete(
        self, messages: list[dict[str, Any]], *, max_tokens: int | None = None, temperature: float | None = None,
        timeout: float | None = None,
    ) -> PluginLlmCompleteResult:
        """One chat completion on `auxiliary.<task>` (else the main model); raises `LlmProviderError`
        when every route fails and `LlmConfigError` when none is configured."""
        return self._host.run(self._call(messages, max_tokens, temperature, timeout), self._finish)

    async def acomplete(
        self, messages: list[dict[str, Any]], *, max_tokens: int | None = None, temperature: float | None = None,
        timeout: float | None = None,
    ) -> PluginLlmCompleteResult:
        return await self._host.arun(self._call(messages, max_tokens, temperature, timeout), self._finish)


class AgentLlm:
    """The host's client for the agent's own conversation: the main model and its fallback
    chain, with tools. Audited as `host`, purpose `agent`.

    >>> answer = manager.agent_llm().complete(messages, tools=session.tool_schemas())
    >>> answer.text, answer.tool_calls, answer.usage
    """

    __slots__ = ("_host",)

    def __init__(self, host: LlmHost) -> None:
        self._host = host

    def complete(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None, temperature: float | None = None, timeout: float | None = None,
        observer: AttemptObserver | None = None, stream: StreamSink | None = None,
    ) -> Answer:
        """One request; the answer has `text`, `tool_calls` (OpenAI format), `usage`, who answered.
        `observer` sees each attempt (the loop's `AgentRequestHooks`); with `stream`, the answer
        is streamed (from servers whose `stream` is not false) and `stream` sees it arrive."""
        from .host import Call

        call = Call("host", "agent", check_messages(messages), temperature, max_tokens, timeout,
                    purpose="agent", task="agent", tools=tools or None, observer=observer, stream=stream)
        return self._host.run(call, lambda answer: answer)
