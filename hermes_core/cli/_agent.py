"""`hermes run`, `hermes chat` and `hermes sessions`: the reference host's commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from .._errors import LlmConfigError
from ._common import echo_json, echo_table, manager

F = TypeVar("F", bound=Callable[..., Any])

NO_MODEL = ("no model is configured: add `model: {provider: custom, model: NAME, base_url: URL}` (any "
            "OpenAI-compatible endpoint; or provider openrouter/openai/anthropic with its API key in the "
            "environment) to $HERMES_HOME/config.yaml")


def _agent(ctx: click.Context, session_id: str | None, resume: bool, max_iterations: int | None) -> Any:
    from ..agent import Agent, Display

    loaded = manager(ctx)
    from .. import config_keys

    if not loaded.config.read(config_keys.MODEL_MODEL):
        raise click.ClickException(NO_MODEL)
    return Agent(loaded, session_id=session_id, resume=resume, display=Display(), max_iterations=max_iterations)


def _turn(agent: Any, text: str) -> None:
    """One turn: the answer on stdout (streamed on a terminal), then its tokens and cost. A
    provider failure, a missing model, the host's LLM budget (`model.budget`) or no answer within
    the iteration limit is one line (an error), the session is kept."""
    from .._errors import LlmProviderError, PluginLlmBudgetError

    try:
        result = agent.ask(text)
    except (LlmConfigError, PluginLlmBudgetError) as exc:
        raise click.ClickException(f"{exc} (session {agent.session_id} kept)") from None
    except LlmProviderError as exc:
        raise click.ClickException(f"every provider failed: {str(exc).splitlines()[0]} "
                                   f"(session {agent.session_id} kept; resume with "
                                   f"`hermes chat --resume {agent.session_id}`)") from None
    if result.stopped == "max_iterations":
        agent.display.usage(result.input_tokens, result.output_tokens, result.cost)
        raise click.ClickException(
            f"no answer: stopped after {agent.max_iterations} rounds of tool calls (agent.max_iterations or "
            f"--max-iterations allows more; session {agent.session_id} kept)")
    agent.display.answer(str(result.text))
    agent.display.usage(result.input_tokens, result.output_tokens, result.cost)


@click.command()
@click.argument("prompt", nargs=-1, required=True)
@click.option("--session", "session_id", help="Continue this session (see `hermes sessions list`).")
@click.option("--max-iterations", type=click.IntRange(1, 200), help="Tool-call rounds allowed (agent.max_iterations, 20).")
@click.pass_context
def run(ctx: click.Context, prompt: tuple[str, ...], session_id: str | None, max_iterations: int | None) -> None:
    """Run one task: PROMPT goes to the agent, the answer is printed."""
    with _agent(ctx, session_id, bool(session_id), max_iterations) as agent:
        _turn(agent, " ".join(prompt))


# The chat's own commands, with what /help says of them; plugin commands come after.
BUILTINS = {
    "/help": "this list",
    "/compress [topic]": "compress the conversation now (optionally around a topic)",
    "/reset": "clear the conversation (the stored transcript keeps it)",
    "/exit": "leave the chat (also /quit, Ctrl-D, or Ctrl-C at an empty prompt)",
}


@click.command()
@click.option("--resume", "session_id", help="Continue a stored session.")
@click.option("--max-iterations", type=click.IntRange(1, 200), help="Tool-call rounds allowed per turn.")
@click.pass_context
def chat(ctx: click.Context, session_id: str | None, max_iterations: int | None) -> None:
    """Talk with the agent. /help lists the commands: plugin commands run as /name; /compress [topic],
    /reset, /exit. Line editing, history ($HERMES_HOME/chat_history) and Tab completion of / commands
    on a terminal."""
    from .._paths import hermes_home
    from ._prompt import Prompt

    with _agent(ctx, session_id, bool(session_id), max_iterations) as agent:
        names = [b.split()[0] for b in BUILTINS] + ["/quit"] + ["/" + c.name for c in agent.manager.commands]
        click.echo(f"session {agent.session_id} — /help for commands, /exit to leave, "
                   "Ctrl-C stops the current answer", err=True)
        with Prompt(hermes_home(), names) as prompt, _asking(agent, prompt.interactive):
            while True:
                try:
                    line = prompt.read("you> ").strip()
                except (EOFError, KeyboardInterrupt):
                    if prompt.interactive:
                        click.echo(err=True)  # the prompt's line is left as it was
                    break
                if not line:
                    continue
                if line in ("/exit", "/quit"):
                    break
                try:
                    if line.startswith("/"):
                        click.echo(_slash(agent, line))
                    else:
                        _turn(agent, line)
                except KeyboardInterrupt:
                    agent.display.done()
                    click.echo("(interrupted; the session is kept)", err=True)
                except click.ClickException as exc:
                    from .._quote import bounded

                    click.echo(f"hermes: error: {bounded(exc.message)}", err=True)
        click.echo(f"session {agent.session_id} saved", err=True)


class _Asker:
    """`hermes chat`'s approver on a terminal: a tool call a `pre_tool_call` hook puts to a human
    is asked at the prompt; "session" approves its rule until the chat ends."""

    surface = "cli"

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.session_key = agent.session_id
        self.approved: set[str] = set()

    def __call__(self, request: Any) -> str:
        if request.pattern_key in self.approved:
            return "session"
        self.agent.display.done()
        click.echo(f"⚠️  approval needed: {request.description}\n   {request.command}", err=True)
        try:
            answer = input("approve? [o]nce, [s]ession, [d]eny (default: deny) ").strip().lower()
        except EOFError:
            return "deny"
        choice = {"o": "once", "once": "once", "y": "once", "yes": "once", "s": "session",
                  "session": "session"}.get(answer, "deny")
        if choice == "session":
            self.approved.add(request.pattern_key)
        return choice


def _asking(agent: Any, interactive: bool) -> Any:
    """Tool calls put to a human are asked at the prompt, on a terminal (else they are refused)."""
    import contextlib

    from ..hosting import approver_scope

    return approver_scope(_Asker(agent)) if interactive else contextlib.nullcontext()


def _help(agent: Any) -> str:
    """The chat's commands and the loaded plugins' commands, each with what it does."""
    rows = list(BUILTINS.items())
    rows += [(f"/{c.name} {c.args_hint}".rstrip(), f"{c.description or '(no description)'} [{c.plugin_id}]")
             for c in agent.manager.commands]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name.ljust(width)}  {what}" for name, what in rows)


def _slash(agent: Any, line: str) -> str:
    """A slash command's output (an error is one line); a spinner while it runs."""
    from .._errors import HermesError

    name = line.split()[0]
    if name.lower() == "/help":
        return _help(agent)
    agent.display.working("compressing" if name.lower() == "/compress" else f"running {name}")
    try:
        return str(agent.command(line))
    except HermesError as exc:
        from .._quote import bounded

        return f"error: {bounded(str(exc))}"
    finally:
        agent.display.done()


@click.group()
def sessions() -> None:
    """List, search and show stored agent sessions."""


def _store() -> Any:
    from .._paths import hermes_home
    from ..agent import SessionStore
    from ..hosting import state_url

    home = hermes_home()
    return SessionStore(home, url=state_url(home))


def _limit_option(default: int) -> Callable[[F], F]:
    return click.option("-n", "--limit", type=click.IntRange(1), default=default, show_default=True,
                        help="Show at most this many.")


def _showing(shown: int, total: int, what: str) -> None:
    """`showing N of M` on stderr when the listing was cut."""
    if total > shown:
        click.echo(f"showing {shown} of {total} {what} (-n {total} shows all)", err=True)


@sessions.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.option("--user", help="Only the sessions this user started (a gateway sender, an API caller's X-Hermes-User).")
@_limit_option(50)
def list_(as_json: bool, user: str | None, limit: int) -> None:
    """The latest sessions first."""
    import time

    store = _store()
    rows = store.sessions(limit, user=user)
    if as_json:
        echo_json(rows)
    elif not rows:
        click.echo(f"no sessions of user {user!r}" if user is not None else
                   "no sessions yet (start one: hermes run \"...\" or hermes chat)")
    else:
        echo_table(["id", "updated", "messages", "tokens", "title"],
                   [[r["id"], time.strftime("%Y-%m-%d %H:%M", time.localtime(r["updated"])), str(r["messages"]),
                     str(r["input_tokens"] + r["output_tokens"]), r["title"]] for r in rows])
    if len(rows) == limit:
        _showing(len(rows), store.count(user=user), "sessions")


@sessions.command()
@click.argument("query")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@_limit_option(20)
def search(query: str, as_json: bool, limit: int) -> None:
    """Full-text search over every stored message, best matches first."""
    store = _store()
    hits = store.search(query, limit)
    if as_json:
        echo_json(hits)
    elif not hits:
        click.echo(f"nothing found for {query!r}")
    else:
        echo_table(["session", "seq", "role", "snippet"],
                   [[h["session_id"], str(h["seq"]), h["role"], " ".join(h["snippet"].split())] for h in hits])
    if len(hits) == limit:
        _showing(len(hits), store.count(query), "matches")


@sessions.command()
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print the whole session as JSON.")
def show(session_id: str, as_json: bool) -> None:
    """One session: its messages, tool calls, usage and compression events."""
    from .._messages import message_text

    found = _store().show(session_id)
    if found is None:
        raise click.ClickException(f"no session {session_id!r}; see `hermes sessions list`")
    if as_json:
        echo_json(found)
        return
    click.echo(f"session {found['id']} · {found['model']} · {len(found['messages'])} messages · "
               f"{len(found['compressions'])} compressions")
    for message in found["messages"]:
        text = " ".join(message_text(message).split())
        click.echo(f"[{message.get('role')}] {text[:200]}")
