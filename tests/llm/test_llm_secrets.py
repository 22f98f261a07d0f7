"""No credential is reachable by a plugin: not in results, exceptions, log lines, reprs, or any
object reachable from `ctx` / `ctx.llm` by attributes, containers, closures and bound methods.

The walk does not enter modules, classes, function globals or stack frames: code running in
the host's process can always reach those (`gc`, `sys._getframe`, `os.environ`); what this
proves is that nothing the host hands a plugin carries a key.
"""

from __future__ import annotations

import asyncio
import json
import types
from pathlib import Path
from typing import Any

import pytest

from hermes_core import LlmProviderError, PluginLlmTrustError
from hermes_core.testing import ScriptedServer
from tests.helpers import OPAQUE, plugin_ctx, referents

ENV_KEY = "sk-or-ENVSECRET-0001"
POOL = ["sk-or-POOLSECRET-0002", "sk-or-POOLSECRET-0003"]
SECRETS = [ENV_KEY, *POOL]


def leaks(*roots: Any) -> list[str]:
    """Every place under `roots` where a secret shows up, as a path of attribute steps."""
    found, seen = [], set()
    stack: list[tuple[Any, str]] = [(root, f"root{i}") for i, root in enumerate(roots)]
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen or isinstance(obj, OPAQUE) or obj is None:
            continue
        seen.add(id(obj))
        texts = [obj] if isinstance(obj, str) else [obj.decode("latin-1")] if isinstance(obj, bytes) else []
        if not isinstance(obj, (str, bytes, int, float)):
            try:
                texts += [repr(obj), str(obj)]
            except Exception:  # noqa: BLE001 - a repr that fails hides nothing
                pass
        found += [f"{path}: {secret}" for secret in SECRETS for text in texts if secret in text]
        if not isinstance(obj, (str, bytes, int, float, bool)):
            stack.extend((child, f"{path}>{type(child).__name__}") for child in referents(obj))
    # a ctx alone leads to some 70 objects (more, the more loggers the process has): fewer is no walk
    assert len(seen) > 50, f"the walk saw only {len(seen)} objects; it is not walking"
    return found


def test_no_key_is_reachable_from_ctx_results_errors_or_logs(
    home: Path, llm_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "config.yaml").write_text(
        f"model: {{provider: openrouter, model: x/y, base_url: '{llm_server.url}', fallback: "
        f"[{{provider: openrouter, model: x/z, base_url: '{llm_server.url_for('b')}'}}]}}\n"
    )
    (home / "auth.json").write_text(json.dumps({"providers": {"openrouter": {"api_keys": POOL}}}))
    monkeypatch.setenv("OPENROUTER_API_KEY", ENV_KEY)
    ctx = plugin_ctx(home)
    caught: list[BaseException] = []
    llm_server.fail(429, f"quota exceeded for {ENV_KEY}").reply("ok")  # rotation to the next key
    results: list[Any] = [ctx.llm.complete([{"role": "user", "content": "hi"}])]
    llm_server.reply_json({"a": 1})
    results.append(asyncio.run(ctx.llm.acomplete_structured(instructions="i", input=[{"type": "text", "text": "t"}])))
    for key in SECRETS:  # every key rejected, on both providers
        llm_server.fail(401, f"Incorrect API key provided: {key}")
    llm_server.fail(503, "down").fail(503, f"still down {POOL[0]}")
    for _ in range(2):
        try:
            ctx.llm.complete([{"role": "user", "content": "hi"}])
        except LlmProviderError as exc:
            caught.append(exc)
    try:
        ctx.llm.complete([{"role": "user", "content": "hi"}], provider="openai")
    except PluginLlmTrustError as exc:
        caught.append(exc)
    assert len(caught) == 3
    assert [r.api_key for r in llm_server.requests[:2]] == [ENV_KEY, POOL[0]]  # the keys were really used
    assert leaks(ctx, ctx.llm, *results, *caught) == []
    assert not [s for s in SECRETS if s in (home / "logs" / "agent.log").read_text()]


def test_the_walk_finds_a_key_hidden_deep_in_the_object_graph(home: Path) -> None:
    ctx = plugin_ctx(home)
    assert leaks(ctx) == []
    key = ENV_KEY[::-1][::-1]  # a closure cell, not a global
    hidden = types.SimpleNamespace(inner=[{"note": lambda: f"token {key}"}])
    ctx.logger.manager.hermes_test_marker = hidden  # type: ignore[attr-defined]
    try:
        assert leaks(ctx) != []
    finally:
        del ctx.logger.manager.hermes_test_marker  # type: ignore[attr-defined]
