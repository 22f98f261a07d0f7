"""`LifecycleHooks`: the typed call layer over the lifecycle hooks, one method per hook.

Host code never fires a hook by a string: it calls the method of that hook, whose keyword
arguments are the spec's (`hookspecs`), and gets a `HookCall` to `run()` (sync code) or
`await arun()` (async code). A renamed or removed spec is an error here, at import and in
the type checker, not a hook that silently stops firing (tox 4's typed call layer is the
model).

>>> hooks = manager.lifecycle
>>> hooks.on_session_start(session_id="s1", model="gpt-4o", platform="cli").run()
>>> decision = await hooks.pre_tool_call(tool_name="terminal", args={"command": "ls"},
...                                      session_id="s1", tool_call_id="c1").arun()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from . import hookspecs
from ._hook_chains import Chain, Context, FirstText, Gate, Notify, ToolDecision
from ._hooks import HookCall, HookRunner

__all__ = ["LifecycleHooks"]

R = TypeVar("R")


class LifecycleHooks:
    """Every lifecycle hook the host calls, typed: see `hookspecs` for when each one fires."""

    __slots__ = ("_runner",)

    def __init__(self, runner: HookRunner) -> None:
        self._runner = runner

    def __repr__(self) -> str:
        return "<LifecycleHooks>"

    def _call(self, spec: Callable[..., Any], chain: Chain[R]) -> HookCall[R]:
        return self._runner.call(spec.__name__, chain)

    def on_session_start(self, *, session_id: str, model: str, platform: str) -> HookCall[None]:
        """An agent session begins."""
        return self._call(hookspecs.on_session_start,
                          Notify({"session_id": session_id, "model": model, "platform": platform}))

    def on_session_end(self, *, session_id: str, messages: list[dict[str, Any]]) -> HookCall[None]:
        """An agent session ends, with its final messages."""
        return self._call(hookspecs.on_session_end, Notify({"session_id": session_id, "messages": messages}))

    def on_session_reset(self, *, session_id: str) -> HookCall[None]:
        """The conversation was cleared without ending the process."""
        return self._call(hookspecs.on_session_reset, Notify({"session_id": session_id}))

    def pre_llm_call(self, *, session_id: str, messages: list[dict[str, Any]], model: str) -> HookCall[str | None]:
        """Before each LLM call: the context to add to this call's user message, or None."""
        return self._call(hookspecs.pre_llm_call,
                          Context({"session_id": session_id, "messages": messages, "model": model}))

    def post_llm_call(
        self, *, session_id: str, messages: list[dict[str, Any]], response: Any, model: str
    ) -> HookCall[None]:
        """After each LLM call, with the provider's response."""
        return self._call(hookspecs.post_llm_call, Notify(
            {"session_id": session_id, "messages": messages, "response": response, "model": model}))

    def pre_tool_call(
        self, *, tool_name: str, args: Mapping[str, Any], session_id: str, tool_call_id: str
    ) -> HookCall[ToolDecision]:
        """Before a tool runs: whether it may, and with which arguments (fails closed)."""
        return self._call(hookspecs.pre_tool_call,
                          Gate(tool_name, args, {"session_id": session_id, "tool_call_id": tool_call_id}))

    def post_tool_call(
        self, *, tool_name: str, args: dict[str, Any], session_id: str, tool_call_id: str, result: str
    ) -> HookCall[None]:
        """After a tool ran, with its result string."""
        return self._call(hookspecs.post_tool_call, Notify(
            {"tool_name": tool_name, "args": args, "session_id": session_id, "tool_call_id": tool_call_id,
             "result": result}))

    def transform_tool_result(
        self, *, tool_name: str, args: dict[str, Any], result: str, session_id: str
    ) -> HookCall[str | None]:
        """A tool's result as the model should see it: the first string a callback returns, or None."""
        return self._call(hookspecs.transform_tool_result,
                          FirstText({"tool_name": tool_name, "args": args, "result": result, "session_id": session_id}))

    def transform_llm_output(self, *, text: str, session_id: str, model: str) -> HookCall[str | None]:
        """The model's final text as it should be shown: the first string a callback returns, or None."""
        return self._call(hookspecs.transform_llm_output,
                          FirstText({"text": text, "session_id": session_id, "model": model}))
