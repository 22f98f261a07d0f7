"""`hermes acp`: the agent in an editor, over the Agent Client Protocol on stdio. Imported only
when asked for; the SDK (the `acp` extra) only inside the command."""

from __future__ import annotations

import click

from ._common import manager


@click.command()
@click.pass_context
def acp(ctx: click.Context) -> None:
    """Serve the agent to an editor over the Agent Client Protocol (stdin/stdout), until it closes.

    Zed, JetBrains, Neovim and VS Code's ACP clients start it as their agent's command. stdout
    carries only the protocol: what plugins print goes to stderr, with the logs. Sessions are
    this home's stored sessions (`hermes sessions list`).
    """
    import asyncio
    import importlib.util
    import logging

    from .. import config_keys
    from ._agent import NO_MODEL

    if importlib.util.find_spec("acp") is None:
        raise click.ClickException("hermes acp needs the Agent Client Protocol SDK: pip install 'hermes-core[acp]'")
    host_manager = manager(ctx)
    if not host_manager.config.read(config_keys.MODEL_MODEL):
        raise click.ClickException(NO_MODEL)
    logging.basicConfig(level=logging.WARNING, format="hermes acp: %(levelname)s %(name)s: %(message)s")
    from .._version import __version__
    from ..acp_server import serve
    from ._stdout import protocol_streams

    with protocol_streams() as (stdin, stdout):
        asyncio.run(serve(host_manager, stdin, stdout, version=__version__))
