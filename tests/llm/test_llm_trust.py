"""The trust gate of `ctx.llm`: an override passes if and only if the operator's config grants it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from hermes_core import LlmConfigError, PluginLlmTrustError, edit_config
from hermes_core.testing import ScriptedServer
from tests.helpers import llm_config, plugin_ctx

USER = [{"role": "user", "content": "hi"}]
PROVIDERS = ["openrouter", "openai", "anthropic", "custom"]
MODELS = ["scripted-model", "openai/gpt-4o-mini", "anthropic/claude-3-5-haiku"]
FLAGS = {"provider": "allow_provider_override", "model": "allow_model_override",
         "agent_id": "allow_agent_id_override", "profile": "allow_profile_override"}
LISTS = {"provider": "allowed_providers", "model": "allowed_models"}


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without keys, a granted provider override stops at "no credentials": never the network."""
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def variants(name: str) -> st.SearchStrategy[str]:
    """`name` as an operator or a plugin might spell it: any case, stray spaces."""
    return st.tuples(st.sampled_from(["", " ", "  "]), st.sampled_from([name, name.upper(), name.title()]),
                     st.sampled_from(["", " "])).map("".join)


def names(pool: list[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(pool).flatmap(variants)


flag_values = st.sampled_from([None, True, True, True, False, "true", "yes", 1, 0])  # None: key absent
broken_lists = st.sampled_from([5, {"openai": True}, "openai", [None]])  # allow nothing


def list_values(requested: str | None) -> st.SearchStrategy[Any]:
    """An allowlist; often one that names the requested value in another spelling."""
    spelled = [variants(requested).map(lambda v: [v])] if requested else []
    return st.one_of(
        st.none(),  # absent
        st.just([]),
        st.just("*"),
        st.just(["*"]),
        st.lists(names(PROVIDERS + MODELS), max_size=3),
        broken_lists,
        *spelled,
        *[st.tuples(s, names(PROVIDERS + MODELS)).map(lambda t: [t[1], *t[0]]) for s in spelled],
    )


@st.composite
def scenarios(draw: Any) -> tuple[dict[str, Any], dict[str, str | None]]:
    requested = {
        "provider": draw(st.none() | names(PROVIDERS)),
        "model": draw(st.none() | names(MODELS)),
        "agent_id": draw(st.none() | st.just("reviewer")),
        "profile": draw(st.none() | st.just("work")),
    }
    grants: dict[str, Any] = {}
    for flag in FLAGS.values():
        value = draw(flag_values)
        if value is not None:
            grants[flag] = value
    for arg, allowlist in LISTS.items():
        value = draw(list_values(requested[arg]))
        if value is not None:
            grants[allowlist] = value
    return grants, requested


def expected_refusal(grants: dict[str, Any], requested: dict[str, str | None]) -> str | None:
    """The oracle, written from SPEC §10: the key of the first refused override, or None."""
    for arg in ("provider", "model", "agent_id", "profile"):
        value = requested[arg]
        if value is None:
            continue
        if grants.get(FLAGS[arg]) is not True:
            return FLAGS[arg]
        if arg in LISTS and LISTS[arg] in grants:
            allowed = grants[LISTS[arg]]
            if allowed == "*":
                continue
            if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
                return LISTS[arg]
            wanted = value.strip().lower()
            if not any(a.strip() == "*" or a.strip().lower() == wanted for a in allowed):
                return LISTS[arg]
    return None


def write(home: Path, server: ScriptedServer, grants: dict[str, Any]) -> None:
    import io

    buffer = io.StringIO()
    YAML().dump({"plugins": {"entries": {"probe": {"llm": grants}}}}, buffer)
    llm_config(home, server.url, f"agents:\n  reviewer: {{model: {{provider: custom, model: r, base_url: '{server.url}'}}}}\n"
               + buffer.getvalue())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_an_override_passes_if_and_only_if_the_config_grants_it(
    home: Path, llm_server: ScriptedServer, scenario: tuple[dict[str, Any], dict[str, str | None]]
) -> None:
    grants, requested = scenario
    write(home, llm_server, grants)
    llm_server.always("ok")
    refused = expected_refusal(grants, requested)
    llm = plugin_ctx(home).llm
    try:
        llm.complete(USER, **requested)  # type: ignore[arg-type]
    except PluginLlmTrustError as exc:
        assert refused is not None, f"refused {exc.key} although granted"
        assert exc.key == f"plugins.entries.probe.llm.{refused}"
        assert exc.key in str(exc)
    except LlmConfigError:
        # Past the gate: the host cannot serve the override (no key for a hosted provider,
        # no auth.json profile); that is not a refusal.
        assert refused is None, f"{refused} should have been refused"
    else:
        assert refused is None, f"{refused} should have been refused"


def test_request_shaping_arguments_need_no_grant(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.always('{"a": 1}')
    llm = plugin_ctx(home).llm
    llm.complete(USER, temperature=0.1, max_tokens=5, timeout=5, purpose="p")
    llm.complete_structured(instructions="i", input=[{"type": "text", "text": "t"}], json_schema={"type": "object"},
                            json_mode=True, schema_name="s", system_prompt="sys", temperature=0, max_tokens=5)


def test_each_override_is_gated_on_its_own(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url, "plugins: {entries: {probe: {llm: {allow_model_override: true}}}}\n")
    llm_server.always("ok")
    llm = plugin_ctx(home).llm
    assert llm.complete(USER, model="other-model").model == "other-model"
    with pytest.raises(PluginLlmTrustError, match=r"set plugins\.entries\.probe\.llm\.allow_provider_override: true"):
        llm.complete(USER, provider="custom", model="other-model")


def test_refusal_is_a_permission_error_naming_plugin_value_and_key(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url,
               "plugins: {entries: {probe: {llm: {allow_model_override: true, allowed_models: [a-model]}}}}\n")
    with pytest.raises(PermissionError) as caught:
        plugin_ctx(home).llm.complete(USER, model="B-model")
    message = str(caught.value)
    assert "plugin 'probe'" in message and "'B-model'" in message
    assert "plugins.entries.probe.llm.allowed_models (allowed: a-model)" in message
    assert llm_server.requests == []


def test_denied_calls_are_audited(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    with pytest.raises(PluginLlmTrustError):
        plugin_ctx(home).llm.complete(USER, profile="work", purpose="sneaky")
    line = (home / "logs" / "agent.log").read_text().splitlines()[-1]
    assert "plugin=probe" in line and "purpose=sneaky" in line and line.endswith("outcome=denied")


def test_a_config_edit_applies_to_the_next_call_without_a_restart(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("ok")
    llm = plugin_ctx(home).llm
    with pytest.raises(PluginLlmTrustError):
        llm.complete(USER, model="pinned")

    def grant(doc: Any) -> None:
        doc["plugins"] = {"entries": {"probe": {"llm": {"allow_model_override": True}}}}

    edit_config(grant, home)
    assert llm.complete(USER, model="pinned").model == "pinned"

    def revoke(doc: Any) -> None:
        doc["plugins"]["entries"]["probe"]["llm"]["allow_model_override"] = False

    edit_config(revoke, home)
    with pytest.raises(PluginLlmTrustError):
        llm.complete(USER, model="pinned")


@pytest.mark.parametrize("breakage", ["malformed", "unreadable", "entries-not-a-mapping"])
def test_a_broken_or_unreadable_config_denies(home: Path, llm_server: ScriptedServer, breakage: str) -> None:
    llm_config(home, llm_server.url, "plugins: {entries: {probe: {llm: {allow_model_override: true}}}}\n")
    llm = plugin_ctx(home).llm
    path = home / "config.yaml"
    if breakage == "malformed":
        path.write_text(path.read_text() + "plugins: [oops\n")
    elif breakage == "unreadable":
        path.unlink()
        path.mkdir()  # reading it fails whatever the user's permissions
    else:
        llm_config(home, llm_server.url, "plugins: {entries: {probe: [allow_model_override]}}\n")
    with pytest.raises(PluginLlmTrustError, match="allow_model_override"):
        llm.complete(USER, model="pinned")
    assert llm_server.requests == []
