"""The hook specifications of hermes-core (pluggy project name ``"hermes"``).

Three families. *Registration hooks* run once when a plugin loads and receive that plugin's
own ``ctx``; the *CLI hook* runs when the ``hermes`` command line is built; *lifecycle hooks*
run while an agent works. Implement any of them in a plugin module with ``@hookimpl``; a
plain module-level ``register(ctx)`` needs no decorator.

Each spec is declared with its family (and, for a registration hook, what its return value
is), and every list of hook names below is derived from the declarations: adding a hook is
one spec here plus the code that calls it (for a lifecycle hook, a method of
``hermes_core.LifecycleHooks``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import pluggy

if TYPE_CHECKING:
    import click

    from ._context import PluginContext

__all__ = [
    "PROJECT_NAME", "hookspec", "hookimpl", "HookFamily", "HOOKS", "REGISTRATION_HOOKS", "LIFECYCLE_HOOKS",
    "CLI_HOOKS",
]

PROJECT_NAME = "hermes"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

F = TypeVar("F", bound=Callable[..., Any])


class HookFamily(NamedTuple):
    """What a hook is: its family (`registration`, `cli`, `lifecycle`) and, for a registration
    hook, what its return value registers: `tools`, `commands`, or a slot's name."""

    family: str
    returns: str | None = None


HOOKS: dict[str, HookFamily] = {}


def _declare(family: str, returns: str | None = None) -> Callable[[F], F]:
    def declare(spec: F) -> F:
        HOOKS[spec.__name__] = HookFamily(family, returns)
        return hookspec(spec)

    return declare


# -- registration hooks ------------------------------------------------------------------


@_declare("registration")
def register(ctx: PluginContext) -> None:
    """Register everything the plugin offers through ``ctx.register_*``; called once at load.

    Example::

        def register(ctx):
            ctx.register_tool("roll", "dice", {"name": "roll", "parameters": {"type": "object"}},
                              lambda args, **kw: '{"value": 4}')
    """


@_declare("registration", returns="tools")
def register_tool(ctx: PluginContext) -> Any:
    """Return a ``Tool``, an iterable of ``Tool``, or None; called once at load.

    Example::

        @hookimpl
        def register_tool(ctx):
            return Tool("roll", "dice", {"name": "roll", "parameters": {"type": "object"}},
                        lambda args, **kw: '{"value": 4}')
    """


@_declare("registration", returns="commands")
def register_command(ctx: PluginContext) -> Any:
    """Return a ``Command``, an iterable of ``Command``, or None; called once at load.

    Example::

        @hookimpl
        def register_command(ctx):
            return Command("shout", lambda raw_args: raw_args.upper(), description="Shout it")
    """


@_declare("registration", returns="context_engine")
def register_context_engine(ctx: PluginContext) -> Any:
    """Return a context engine (a class, a factory or an instance), or None.

    It joins the ``context_engine`` slot; only ``context.engine`` in config activates it.

    Example::

        @hookimpl
        def register_context_engine(ctx):
            return LcmEngine   # the class: a fresh engine per agent session
    """


@_declare("registration", returns="memory")
def register_memory_provider(ctx: PluginContext) -> Any:
    """Return a memory provider (a class, a factory or an instance), or None.

    It joins the ``memory`` slot; only ``memory.provider`` in config activates it.

    Example::

        @hookimpl
        def register_memory_provider(ctx):
            return VectorMemory
    """


@_declare("cli")
def register_cli_commands(cli: click.Group, ctx: PluginContext) -> None:
    """Add click commands to the ``hermes`` command line; called when the CLI is built.

    Example::

        @hookimpl
        def register_cli_commands(cli, ctx):
            @cli.command("dice-stats")
            def dice_stats():
                click.echo("rolled 12 times")
    """


# -- lifecycle hooks ---------------------------------------------------------------------
# A callback receives only the keyword arguments it declares (``**kwargs`` gets them all).


@_declare("lifecycle")
def on_session_start(session_id: str, model: str, platform: str) -> None:
    """An agent session begins.

    Example::

        @hookimpl
        def on_session_start(session_id):
            log.info("session %s started", session_id)
    """


@_declare("lifecycle")
def on_session_end(session_id: str, messages: list[dict[str, Any]]) -> None:
    """An agent session ends (exit, ``/reset``, expiry); ``messages`` is the final history.

    Example::

        @hookimpl
        def on_session_end(session_id, messages):
            archive(session_id, messages)
    """


@_declare("lifecycle")
def on_session_reset(session_id: str) -> None:
    """The conversation was cleared (``/new``, ``/reset``) without ending the process.

    Example::

        @hookimpl
        def on_session_reset(session_id):
            counters.clear()
    """


@_declare("lifecycle")
def pre_llm_call(session_id: str, messages: list[dict[str, Any]], model: str) -> Any:
    """Before each LLM call. Return text (or ``{"context": text}``) to add to the user
    message of this call only; it never reaches the system prompt.

    Example::

        @hookimpl
        def pre_llm_call(messages):
            return f"Current time: {datetime.now():%H:%M}"
    """


@_declare("lifecycle")
def post_llm_call(session_id: str, messages: list[dict[str, Any]], response: Any, model: str) -> None:
    """After each LLM call, with the provider's response.

    Example::

        @hookimpl
        def post_llm_call(response):
            metrics.record(response.usage)
    """


@_declare("lifecycle")
def pre_tool_call(tool_name: str, args: dict[str, Any], session_id: str, tool_call_id: str) -> Any:
    """Before a tool runs. Return None to allow, ``{"action": "block", "message": text}`` to
    block (the message becomes the tool result), or ``{"action": "modify", "args": {...}}``.
    A callback that raises or times out blocks the call (fail closed).

    Example::

        @hookimpl
        def pre_tool_call(tool_name, args):
            if tool_name == "terminal" and "rm -rf" in args.get("command", ""):
                return {"action": "block", "message": "refusing to delete recursively"}
    """


@_declare("lifecycle")
def post_tool_call(tool_name: str, args: dict[str, Any], session_id: str, tool_call_id: str, result: str) -> None:
    """After a tool ran, with its result string.

    Example::

        @hookimpl
        def post_tool_call(tool_name, result):
            audit.write(tool_name, len(result))
    """


@_declare("lifecycle")
def transform_tool_result(tool_name: str, args: dict[str, Any], result: str, session_id: str) -> Any:
    """Rewrite a tool result before the model sees it; the first non-None string wins.

    Example::

        @hookimpl
        def transform_tool_result(result):
            return redact_secrets(result)
    """


@_declare("lifecycle")
def transform_llm_output(text: str, session_id: str, model: str) -> Any:
    """Rewrite the model's final text before it is shown; the first non-None string wins.

    Example::

        @hookimpl
        def transform_llm_output(text):
            return text.replace("\\t", "    ")
    """


def _family(family: str) -> tuple[str, ...]:
    return tuple(name for name, hook in HOOKS.items() if hook.family == family)


REGISTRATION_HOOKS = _family("registration")
CLI_HOOKS = _family("cli")
LIFECYCLE_HOOKS = _family("lifecycle")
