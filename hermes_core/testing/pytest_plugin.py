"""The pytest plugin of hermes-core's test kit (entry point `pytest11`).

Loaded by every pytest run once hermes-core is installed, so it imports nothing heavy until
a fixture is used; it serves Hermes' module names (`agent.*`, `tools.registry`, ...) to the
test modules, as hermes-core serves them to plugins. Fixtures:

- `hermes_home`: an empty, isolated `$HERMES_HOME` (the environment variable points at it);
- `hermes_config`: call it with a mapping to merge into `$HERMES_HOME/config.yaml`;
- `hermes_manager`: call it with plugins (modules, objects, or installed entry-point names)
  for a `PluginManager` with them and the built-ins loaded;
- `plugin_ctx`: call it with a plugin (or nothing, for an empty one) for its `ctx`;
- `llm_server`: a scripted OpenAI-compatible server on 127.0.0.1;
- `scripted_llm`: the same server, already the `model` of the config, so `ctx.llm` reaches it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .._ctx.context import PluginContext
    from .._manager import PluginManager
    from ._fixtures import HermesConfig
    from ._server import ScriptedServer


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Hermes' module names are served from the start of the run (where no Hermes Agent is
    installed), so a test module can import `agent.memory_provider` or `tools.registry` at its
    top, as the plugin under test does. `--hypothesis-profile=hermes-contract-thorough` names a
    profile the contract suites register: register it before hypothesis loads it."""
    from .._hermes import names

    names.install()
    profile = config.getoption("hypothesis_profile", None)
    if isinstance(profile, str) and profile.startswith("hermes-contract"):
        from ._contract_common import register_profiles

        register_profiles()


@pytest.fixture
def llm_server() -> Iterator[ScriptedServer]:
    """A running scripted OpenAI-compatible server; queue replies, then read `requests`."""
    from ._server import ScriptedServer

    with ScriptedServer() as server:
        yield server


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty `$HERMES_HOME` for this test; project plugins (./.hermes/plugins) off."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.delenv("HERMES_ENABLE_PROJECT_PLUGINS", raising=False)
    return home


@pytest.fixture
def hermes_config(hermes_home: Path) -> HermesConfig:
    """`hermes_config({"memory": {"provider": "x"}})` merges into `$HERMES_HOME/config.yaml`."""
    from ._fixtures import HermesConfig

    return HermesConfig(hermes_home)


@pytest.fixture
def hermes_manager(hermes_home: Path, hermes_config: HermesConfig) -> Callable[..., PluginManager]:
    """`hermes_manager(my_plugin_module, "some-entry-point")`: a loaded `PluginManager`."""
    from ._fixtures import load_plugins

    return lambda *plugins: load_plugins(hermes_home, hermes_config, plugins)


@pytest.fixture
def plugin_ctx(hermes_manager: Callable[..., PluginManager]) -> Callable[..., PluginContext]:
    """`plugin_ctx(my_plugin)` is its `ctx`; `plugin_ctx()` is the ctx of an empty plugin.

    A ctx works while its manager does; the managers made here live until the test ends."""
    managers: list[PluginManager] = []

    def make(plugin: Any = None) -> PluginContext:
        if plugin is None:
            def test_plugin(ctx: Any) -> None:
                """An empty plugin, for a bare ctx."""

            plugin = test_plugin
        manager = hermes_manager(plugin)
        managers.append(manager)
        ctx = manager.records[-1].ctx
        assert ctx is not None
        return ctx

    return make


@pytest.fixture
def scripted_llm(llm_server: ScriptedServer, hermes_config: HermesConfig) -> ScriptedServer:
    """The scripted server as the configured model (`provider: custom`, model `scripted-model`)."""
    hermes_config({"model": {"provider": "custom", "model": "scripted-model", "base_url": llm_server.url}})
    return llm_server
