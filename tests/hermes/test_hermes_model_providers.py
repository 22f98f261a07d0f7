"""Model-provider plugins written as Hermes' are: `from providers import register_provider`, a
`ProviderProfile` naming an OpenAI-compatible endpoint, `register(ctx=None)`; the profile is an
LLM route `model.provider` selects, through the `hermes` CLI against the scripted server."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core import PluginManager
from tests.helpers import hermes, hermes_json, install_dist, make_folder_plugin, write_config

PROVIDER = """
from typing import Any

from providers import register_provider
from providers.base import ProviderProfile

acme = ProviderProfile(
    name="acme",
    aliases=("acme-ai",),
    display_name="Acme",
    env_vars=("ACME_API_KEY", "ACME_BASE_URL"),
    base_url={base_url!r},
    fallback_models=("acme-large", "acme-small"),
)


def register(ctx: Any = None) -> ProviderProfile:
    del ctx
    register_provider(acme)
    return acme
"""


def rows(command: str) -> dict[str, dict]:
    data = hermes_json("plugins", command)
    return {row["id"]: row for row in (data if command == "list" else data["plugins"])}


def test_an_installed_model_provider_is_the_route_model_provider_selects(
        home: Path, site: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    install_dist(site, "acme-hermes-provider", {"acme-provider": "acme_provider"},
                 {"acme_provider": PROVIDER.format(base_url=llm_server.url)},
                 requires=("hermes-agent>=0.18.2,<0.19",))
    monkeypatch.setenv("ACME_API_KEY", "sk-acme")
    write_config(home, "plugins:\n  enabled: [acme-provider]\nmodel:\n  provider: acme-ai\n  model: acme-large\n")
    listed = rows("list")["acme-provider"]
    assert (listed["kind"], listed["error"], listed["needs_host"]) == ("model-provider", None, None)
    doctor = rows("doctor")["acme-provider"]
    assert (doctor["status"], doctor["registered"]) == ("ok", {"model_providers": ["acme"]})
    llm_server.reply("Hello from Acme.")
    assert hermes("run", "hello").stdout.strip() == "Hello from Acme."
    (request,) = llm_server.requests
    assert (request.model, request.api_key) == ("acme-large", "sk-acme")


def test_a_model_providers_folder_is_found_and_its_base_url_variable_wins(
        home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = home / "plugins" / "model-providers" / "acme"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(PROVIDER.format(base_url="https://api.acme.invalid/v1"), encoding="utf-8")
    monkeypatch.setenv("ACME_API_KEY", "sk-folder")
    monkeypatch.setenv("ACME_BASE_URL", llm_server.url)
    write_config(home, "plugins:\n  enabled: [model-providers/acme]\nmodel:\n  provider: acme\n  model: acme-small\n")
    listed = rows("list")["model-providers/acme"]
    assert (listed["kind"], listed["enabled"], listed["error"]) == ("model-provider", True, None)
    llm_server.reply("Folder answer.")
    assert hermes("run", "hello").stdout.strip() == "Folder answer."
    assert llm_server.requests[0].api_key == "sk-folder"


def test_a_provider_whose_plugin_is_not_enabled_is_one_line_saying_what_to_do(home: Path, llm_server) -> None:
    make_folder_plugin(home / "plugins", "acme", PROVIDER.format(base_url=llm_server.url), "kind: model-provider\n")
    write_config(home, "model:\n  provider: acme\n  model: acme-large\n")
    assert rows("list")["acme"]["kind"] == "model-provider"
    result = hermes("run", "hello", check=None)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "'acme', which is not a known provider" in result.stderr and "plugins.enabled" in result.stderr
    assert llm_server.requests == []


def test_a_failed_load_takes_its_profile_with_it(home: Path) -> None:
    make_folder_plugin(home / "plugins", "half", PROVIDER.format(base_url="https://api.acme.invalid/v1")
                       + "\nraise RuntimeError('half-installed')\n", "kind: model-provider\n")
    make_folder_plugin(home / "plugins", "whole", PROVIDER.format(base_url="https://api.whole.invalid/v1")
                       .replace('name="acme"', 'name="whole"').replace('("acme-ai",)', "()"),
                       "kind: model-provider\n")
    write_config(home, "plugins:\n  enabled: [half, whole]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.record("half").status == "failed"
        assert manager.record("whole").registered == {"model_providers": ["whole"]}
        import providers

        assert providers.get_provider_profile("acme") is None and providers.get_provider_profile("acme-ai") is None
        assert providers.get_provider_profile("whole").base_url == "https://api.whole.invalid/v1"
        write_config(home, "plugins:\n  enabled: []\n")
        manager.reload()  # disabled: unloaded, and its profile with it
        assert providers.get_provider_profile("whole") is None
    finally:
        manager.close()


def test_a_profile_has_hermes_defaults_and_hooks(home: Path) -> None:
    make_folder_plugin(home / "plugins", "probe", """
from providers.base import ProviderProfile, OMIT_TEMPERATURE

PROFILE = ProviderProfile(name="probe", base_url="https://api.probe.invalid/v1")

def register(ctx):
    ctx.register_command("probe", lambda raw: repr((PROFILE.api_mode, PROFILE.auth_type, PROFILE.aliases,
        PROFILE.get_hostname(), PROFILE.get_max_tokens("m"), PROFILE.build_api_kwargs_extras(),
        PROFILE.fixed_temperature is None, OMIT_TEMPERATURE is not None)))
""")
    write_config(home, "plugins:\n  enabled: [probe]\n")
    manager = PluginManager(home=home).load()
    try:
        assert manager.run_command("probe") == repr(("chat_completions", "api_key", (), "api.probe.invalid", None,
                                                      ({}, {}), True, True))
    finally:
        manager.close()
