"""A plugin's argparse-style command (`ctx.register_cli_command`) served as `hermes <name> ...`.

click hands everything after the name to the plugin's own `argparse` parser untouched (so
`-h` is the parser's help, and its subcommands work); the handler's return value is the exit
code when it is an int. A handler that raises is a one-line error naming the plugin.
"""

from __future__ import annotations

import argparse
from typing import Any

import click

from .._commands.cli import CliCommand
from .._errors import CommandFailedError, owner
from .._runtime.invoke import contained, describe_error
from ._stdout import plugin_owns_stdout

__all__ = ["add_commands", "as_click"]


def _parser(command: CliCommand) -> argparse.ArgumentParser:
    """The parser Hermes would hand `setup_fn`: the subparser of `hermes <name>`."""
    root = argparse.ArgumentParser(prog="hermes", add_help=False)
    sub = root.add_subparsers(dest="_hermes_command")
    parser = sub.add_parser(command.name, help=command.help, description=command.description or command.help)
    parser.prog = f"hermes {command.name}"
    return parser


def as_click(command: CliCommand) -> click.Command:
    """`command` as a click command whose arguments go to the plugin's parser."""

    def run(args: tuple[str, ...]) -> None:
        parser = _parser(command)
        try:
            with plugin_owns_stdout():  # the plugin's command: what it prints is the output
                result = _run(parser, args)
        except click.exceptions.Exit:
            raise
        except BaseException as exc:
            contained(exc)
            raise CommandFailedError(
                f"`hermes {command.name}` of {owner(command.plugin_id)} failed: {describe_error(exc)}"
            ) from exc
        if isinstance(result, bool) or not isinstance(result, int):
            return
        if result:
            raise click.exceptions.Exit(result)

    def _run(parser: argparse.ArgumentParser, args: tuple[str, ...]) -> Any:
        if command.setup_fn is not None:
            command.setup_fn(parser)
        if command.handler_fn is not None:
            parser.set_defaults(func=command.handler_fn)
        try:
            namespace = parser.parse_args(list(args))
        except SystemExit as exc:  # argparse's own: --help (0) or a usage error (2), already printed
            raise click.exceptions.Exit(exc.code if isinstance(exc.code, int) else 2) from None
        handler = getattr(namespace, "func", None)
        if handler is None:
            parser.print_help()
            raise click.exceptions.Exit(2)
        return handler(namespace)

    return click.Command(
        command.name,
        callback=run,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        help=command.description or command.help,
        short_help=command.help,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
        add_help_option=False,
    )


def add_commands(cli: click.Group, commands: list[CliCommand]) -> list[str]:
    """Serve each plugin's argparse command as `hermes <name>`; returns a warning per command left
    out because the group already has that name."""
    problems = []
    for command in commands:
        if command.name in cli.commands:
            problems.append(f"`hermes {command.name}` of plugin {command.plugin_id!r} was left out: "
                            "another command has that name")
            continue
        cli.add_command(as_click(command))
    return problems
