"""`hermes serve`: the agent and its plugins behind an OpenAI-compatible API. Imported only when
asked for; Starlette and uvicorn (the `server` extra) only inside the command."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import click

from ._common import manager


def _needs_extra() -> None:
    import importlib.util

    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise click.ClickException(f"hermes serve needs {' and '.join(missing)}: pip install 'hermes-core[server]'")


@click.command()
@click.option("--host", help="The address to listen on (default 127.0.0.1; another needs a key).")
@click.option("--port", type=click.IntRange(0, 65535), help="The port (default 8642; 0: a free one).")
@click.pass_context
def serve(ctx: click.Context, host: str | None, port: int | None) -> None:
    """Serve the agent over an OpenAI-compatible HTTP API until Ctrl-C or SIGTERM.

    Chat completions, responses, models, runs and sessions, as Hermes' API server has them; the
    first line on stderr starts with the base URL (for OPENAI_BASE_URL). Keys: API_SERVER_KEY
    (full access) and api_server.keys.<name> in config.yaml (their own endpoints, tools, budget).
    api_server.profiles: [names] serves those profiles too, each under /p/<name>/v1 with the
    API_SERVER_KEY of its own .env.
    """
    import asyncio

    from .. import config_keys
    from ._agent import NO_MODEL

    _needs_extra()
    from ..api_server import ApiServer, Keys, settings
    from ..hosting import is_loopback

    host_manager = manager(ctx)
    config = host_manager.config
    if not config.read(config_keys.MODEL_MODEL):
        raise click.ClickException(NO_MODEL)
    chosen = settings(config)
    address, number = host or chosen.host, chosen.port if port is None else port
    api_keys = Keys.from_config(config, main_key=chosen.key or None)
    if not is_loopback(address) and not api_keys.any:
        raise click.ClickException(f"hermes serve: {address} is not a loopback address; set API_SERVER_KEY (or "
                                   "api_server.keys in config.yaml) so that only callers with a key get in")
    server = ApiServer(host_manager, keys_=api_keys, model_name=chosen.model_name)
    mounted = _profiles(host_manager)
    app = None
    if mounted:
        from ..api_server import profiles_app

        app = profiles_app(server, mounted)

    def ready(url: str) -> None:
        access = f"{len(api_keys.secrets)} key(s)" if api_keys.any else "no key (loopback only)"
        click.echo(f"{url}/v1 hermes serve: model {chosen.model_name}, {access}; Ctrl-C stops", err=True)
        for name, profile in mounted.items():
            state = "closed: no API_SERVER_KEY in its .env" if profile.server is None else "its own key(s)"
            click.echo(f"{url}/p/{name}/v1 hermes serve: profile {name}, {state}", err=True)

    asyncio.run(server.serve(address, number, ready=ready, app=app))


def _profiles(host: Any) -> dict[str, Any]:
    """The profiles `api_server.profiles` lists, each with its API server (None: closed, no key)."""
    from .. import config_keys
    from .._hermes.config import load_env
    from .._hermes.constants import get_env_path
    from .._manager import PluginManager
    from .._profiles.manage import existing
    from .._profiles.names import root_of
    from ..api_server import profile_server

    names = host.config.read(config_keys.API_SERVER_PROFILES)
    root = root_of(host.home)
    mounted: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        home = existing(root, name)
        if home.resolve() == host.home.resolve():
            raise click.ClickException(f"api_server.profiles lists {name!r}, the profile this server runs as (its "
                                       "routes are /v1/...); remove it from the list")
        with _home_override(home):  # its own .env, never this process's environment
            env, env_path = load_env(), str(get_env_path())
        mounted[name] = profile_server(name, PluginManager(home=home, lazy=True), env, env_path,
                                       around=functools.partial(_home_override, home))
    return mounted


@contextlib.contextmanager
def _home_override(home: Any) -> Iterator[None]:
    """Hermes' `get_hermes_home()` (and the `.env` it reads) answers `home` in this context: a
    listed profile's plugins see their own home, in the process that serves them all."""
    from .._hermes.constants import reset_hermes_home_override, set_hermes_home_override

    token = set_hermes_home_override(home)
    try:
        yield
    finally:
        reset_hermes_home_override(token)
