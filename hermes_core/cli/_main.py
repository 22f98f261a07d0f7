"""The `hermes` click group and its entry point: one-line errors, plugin CLI commands, lazy host commands.

Errors are one line on stderr and a non-zero exit; `--debug` shows tracebacks and traces hook
calls (`HERMES_TRACE_HOOKS`). Commands that only need discovery (`plugins list`, `plugins info`)
import no plugin and no heavy dependency.
"""

from __future__ import annotations

import sys
from typing import Any

import click

__all__ = ["main", "cli"]

_DEBUG = False
_RENDERED_FROM = "hermes_core.help_rendered_from"  # ctx.meta: the command cache's key the help listed


class _RootGroup(click.Group):
    """Built-in commands resolve without loading plugins; anything else asks the plugins
    (`register_cli_commands`) first. The reference host's commands are imported only when
    asked for: `hermes plugins list` should not pay for them."""

    _extended = False
    _lazy = {"run": "_agent", "chat": "_agent", "sessions": "_agent", "paths": "_paths", "mcp": "_mcp",
             "gateway": "_gateway", "pairing": "_gateway", "batch": "_batch", "serve": "_serve", "acp": "_acp",
             "cron": "_cron", "skills": "_skills", "state": "_state", "profile": "_profile",
             "dashboard": "_dashboard", "prompt": "_prompt_show", "config": "_config"}

    def _extend(self, ctx: click.Context) -> None:
        """Load the plugins and add their commands; remember them for `--help` (`_command_cache`)."""
        if self._extended:
            return
        self._extended = True
        from . import _command_cache
        from ._argparse import add_commands
        from ._common import manager

        own = {*self.commands, *self._lazy}
        plugins = manager(ctx)
        for problem in [*plugins.extend_cli(self), *add_commands(self, plugins.cli_commands)]:
            click.echo(f"hermes: warning: {problem}", err=True)
        added = {name: _command_cache.short_help(cmd) for name, cmd in self.commands.items()
                 if name not in own and not getattr(cmd, "hidden", False)}
        _command_cache.write(_command_cache.fingerprint(), added)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """`--help`'s command list: the plugins' commands from the last load while nothing
        installed or enabled has changed since, so that asking for help imports no plugin."""
        from . import _command_cache

        key = None if self._extended else _command_cache.fingerprint()
        cached = None if key is None else _command_cache.read(key)
        if cached is None:
            super().format_commands(ctx, formatter)
            return
        ctx.meta[_RENDERED_FROM] = key
        own = {name: self.get_command(ctx, name) for name in sorted({*self.commands, *self._lazy})}
        names = sorted({*own, *cached})
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = own.get(name)
            if command is not None:
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
            else:
                text = cached[name]
                rows.append((name, text if len(text) <= limit else text[:max(limit - 3, 1)].rstrip() + "..."))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_help(self, ctx: click.Context) -> str:
        """`hermes --help`; when its command list came from the last load, the text is kept
        beside it for the console script to print without importing click (`_start`)."""
        text = super().get_help(ctx)
        key = ctx.meta.pop(_RENDERED_FROM, None)
        if key is not None and "\x1b" not in text:
            from . import _command_cache

            rendering = _command_cache.rendering()
            if rendering is not None:
                _command_cache.write_help(key, rendering, text)
        return text

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy and cmd_name not in self.commands:
            import importlib

            module = importlib.import_module(f"hermes_core.cli.{self._lazy[cmd_name]}")
            self.add_command(getattr(module, cmd_name))
        command = super().get_command(ctx, cmd_name)
        if command is None and not ctx.resilient_parsing:
            self._extend(ctx)
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._extend(ctx)
        return sorted({*super().list_commands(ctx), *self._lazy})


def _debugging(ctx: click.Context, param: click.Parameter, debug: bool) -> bool:
    """`--debug` traces every hook callback call too (`HERMES_TRACE_HOOKS`): set while the options
    are parsed, before any plugin manager is made (resolving a plugin's command makes one)."""
    if debug:
        import os

        from .._hooks.tracing import VARIABLE

        os.environ[VARIABLE] = "1"
    return debug


@click.group(cls=_RootGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, callback=_debugging,
              help="Show tracebacks and debug logging, and trace hook calls.")
@click.version_option(package_name="hermes-core", prog_name="hermes")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """hermes-core: plugins, tools, commands and engines for LLM agents.

    `hermes -p NAME COMMAND ...` (or --profile NAME) runs any command in profile NAME; see
    `hermes profile`.
    """
    global _DEBUG
    _DEBUG = debug
    ctx.obj = {"debug": debug}


def _register() -> None:
    from . import _plugins, _tools

    cli.add_command(_plugins.plugins)
    cli.add_command(_tools.tools)
    cli.add_command(_tools.command)


_register()


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the `hermes` console script: every error is one line on stderr; the
    process ends promptly even when plugin code left threads running (named in a warning)."""
    from .._runtime import interrupts, leftovers

    interrupts.install()
    return leftovers.finish(lambda: _main(argv), lambda line: click.echo(f"hermes: warning: {line}", err=True))


def _main(argv: list[str] | None) -> Any:
    from .._errors import HermesError
    from .._profiles.select import apply
    from ._stdout import routed

    try:  # the profile first: every command, host and child process runs in its home
        argv = apply(sys.argv[1:] if argv is None else argv, lambda line: click.echo(f"hermes: warning: {line}", err=True))
    except HermesError as exc:
        _fail(str(exc), 2)
    try:
        with routed():  # what plugin code prints goes to stderr: stdout is the command's output
            code = cli.main(args=argv, prog_name="hermes", standalone_mode=False)
    except click.UsageError as exc:
        if exc.ctx is not None and type(exc).__name__ == "NoArgsIsHelpError":  # click 8.1 exits 0 itself
            click.echo(exc.ctx.get_help(), color=exc.ctx.color)  # bare `hermes`, `hermes plugins`: help
            sys.exit(0)
        where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        _fail(exc.format_message() + where, exc.exit_code)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except HermesError as exc:
        _fail(str(exc))
    except (KeyboardInterrupt, click.Abort):
        click.echo("hermes: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(141)
    except OSError as exc:  # a path of the command's input or output, or the disk: said as such
        if exc.strerror is None and not _DEBUG:
            from .._quote import internal_error

            _fail(internal_error(exc))
        _fail(os_error_line(exc))
    except Exception as exc:  # noqa: BLE001 - never a traceback unless asked for
        if _DEBUG:
            raise
        from .._quote import internal_error

        _fail(internal_error(exc))
    sys.exit(code if isinstance(code, int) else 0)


def os_error_line(exc: OSError) -> str:
    """An `OSError` of the environment in one line: the path (and the other, for a rename) and what
    the system said (`Not a directory`, `Read-only file system`, `No space left on device`)."""
    where = f"{exc.filename}" + (f" -> {exc.filename2}" if getattr(exc, "filename2", None) else "")
    if exc.filename is not None:
        return f"cannot use {where}: {exc.strerror}"
    return f"{exc.strerror} (errno {exc.errno}); check the disk and the output's destination"


def _fail(message: str, code: int = 1) -> None:
    if _DEBUG:
        import traceback

        traceback.print_exc()
    from .._quote import error_line

    click.echo(error_line(message), err=True)
    sys.exit(code)
