"""`acomplete` on the async transport (the SDK's aiohttp client when installed, else httpx):
the same failures, keys, time limits and request bodies as the sync calls, and many calls at once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_core import LlmProviderError
from hermes_core.testing import ScriptedServer
from tests.helpers import llm_config, plugin_ctx

USER = [{"role": "user", "content": "hello there"}]


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def fallback_config(home: Path, server: ScriptedServer) -> None:
    (home / "config.yaml").write_text(
        f"model:\n  provider: custom\n  model: primary\n  base_url: {server.url_for('a')}\n"
        f"  fallback:\n    - {{provider: custom, model: backup, base_url: '{server.url_for('b')}'}}\n"
    )


def test_async_request_body_is_what_the_sync_call_sends(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("ok")
    llm = plugin_ctx(home).llm
    messages = [{"role": "system", "content": "é ✓ \u2028"}, *USER]
    llm.complete(messages, temperature=0.5, max_tokens=3)
    asyncio.run(llm.acomplete(messages, temperature=0.5, max_tokens=3))
    sync, async_ = llm_server.requests
    assert sync.body == async_.body == {"model": "scripted-model", "messages": messages, "temperature": 0.5,
                                        "max_tokens": 3}
    assert async_.headers.get("content-type") == "application/json"


def test_async_dropped_connection_and_malformed_body_fall_back(home: Path, llm_server: ScriptedServer) -> None:
    fallback_config(home, llm_server)
    llm_server.drop().reply("after a drop").malformed().reply("after a bad body")
    llm = plugin_ctx(home).llm
    assert asyncio.run(llm.acomplete(USER)).text == "after a drop"
    assert asyncio.run(llm.acomplete(USER)).text == "after a bad body"


def test_async_retry_after_is_waited_once(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.fail(429, retry_after=0.2).reply("waited")
    assert asyncio.run(plugin_ctx(home).llm.acomplete(USER)).text == "waited"
    assert len(llm_server.requests) == 2


def test_async_key_rotation(home: Path, llm_server: ScriptedServer) -> None:
    (home / "config.yaml").write_text(f"model: {{provider: openai, model: gpt-x, base_url: '{llm_server.url}'}}\n")
    (home / "auth.json").write_text(json.dumps({"providers": {"openai": {"api_keys": ["sk-a", "sk-b"]}}}))
    llm_server.fail(401, "bad key").reply("second key works")
    assert asyncio.run(plugin_ctx(home).llm.acomplete(USER)).text == "second key works"
    assert [r.api_key for r in llm_server.requests] == ["sk-a", "sk-b"]


def test_async_time_limit(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.reply("slow", delay=1.5)
    with pytest.raises(LlmProviderError, match="timed out after 0.3 s"):
        asyncio.run(plugin_ctx(home).llm.acomplete(USER, timeout=0.3))


def test_many_async_calls_at_once_each_get_their_answer(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("ok")
    llm = plugin_ctx(home).llm

    async def batch() -> list[str]:
        results = await asyncio.gather(*(llm.acomplete(USER, purpose=f"p{i}") for i in range(30)))
        return [r.text for r in results]

    assert asyncio.run(batch()) == ["ok"] * 30
    assert len(llm_server.requests) == 30


def test_async_calls_work_without_aiohttp(home: Path, llm_server: ScriptedServer) -> None:
    llm_config(home, llm_server.url)
    llm_server.always("over httpx")
    script = textwrap.dedent(f"""
        import asyncio, pathlib, sys
        sys.modules["aiohttp"] = None  # as if the SDK's aiohttp extra were not installed
        from hermes_core import PluginManager
        manager = PluginManager(home=pathlib.Path({str(home)!r}), discover_plugins=False).load()
        ctx = manager.add_plugin(lambda ctx: ctx.register_command("x", str), "x").ctx
        print(asyncio.run(ctx.llm.acomplete([{{"role": "user", "content": "hi"}}])).text)
        assert "aiohttp" not in sys.modules or sys.modules["aiohttp"] is None
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "over httpx"
