"""Slash commands: normalised names, clashes, sync and async handlers."""

from __future__ import annotations

import asyncio

import pytest

from hermes_core import Command, CommandFailedError, PluginManager, UnknownCommandError


@pytest.mark.parametrize(("given", "name"), [("/TLDR", "tldr"), ("Paste To Tasks", "paste-to-tasks"), (" /wc ", "wc")])
def test_names_are_normalised(given: str, name: str) -> None:
    assert Command(given, lambda raw: raw).name == name


def test_clash_is_rejected_with_a_warning_naming_both(home, caplog) -> None:
    manager = PluginManager()
    manager.add_plugin(lambda ctx: ctx.register_command("/Sum", lambda raw: "first"), "first")
    second = manager.add_plugin(lambda ctx: ctx.register_command("sum", lambda raw: "second"), "second")
    assert second.status == "ok"  # a rejected command is a warning, not a failed plugin
    assert manager.run_command("sum") == "first"
    assert "plugin 'second'" in caplog.text and "plugin 'first'" in caplog.text
    assert any("/sum" in p for p in manager.doctor().problems)


def test_sync_and_async_handlers(home) -> None:
    async def shout(raw):
        await asyncio.sleep(0)
        return raw.upper()

    manager = PluginManager()
    manager.add_plugin(lambda ctx: (ctx.register_command("shout", shout), ctx.register_command("quiet", lambda raw: None)), "p")
    assert manager.run_command("/shout", "hey") == "HEY"
    assert asyncio.run(manager.arun_command("shout", "yo")) == "YO"
    assert manager.run_command("quiet") is None


def test_failures_name_the_command_and_plugin(home) -> None:
    manager = PluginManager()
    manager.add_plugin(lambda ctx: ctx.register_command("bad", lambda raw: 1 / 0), "p")
    with pytest.raises(CommandFailedError, match=r"/bad \(plugin 'p'\) failed: ZeroDivisionError"):
        manager.run_command("bad")
    with pytest.raises(UnknownCommandError, match=r"available: /bad"):
        manager.run_command("nope")
