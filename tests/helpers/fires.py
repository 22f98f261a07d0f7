"""The `fires` marker's check (tests/conftest.py): which hooks a test fired, seen in this process.

A lifecycle hook is fired when a call of it runs (`HookCall.run()` or `await arun()`) while a
callback is registered for it. Every hook call a host makes starts at `HookRunner.call`, the one
method wrapped; what it returns runs as before, and notes its hook when it does. A registration
or CLI hook is not fired through the runner: the test's plugin notes the call of its
implementation (`FiredHooks.note`, the `fired_hooks` fixture)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from hermes_core import HookRunner, hookspecs

NOTED_HOOKS = frozenset((*hookspecs.REGISTRATION_HOOKS, *hookspecs.CLI_HOOKS))
ALL_HOOKS = frozenset((*hookspecs.REGISTRATION_HOOKS, *hookspecs.LIFECYCLE_HOOKS, *hookspecs.CLI_HOOKS))


class FiredHooks:
    """The hooks fired during one test."""

    def __init__(self) -> None:
        self.fired: set[str] = set()

    def observe(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Wrap `HookRunner.call` (until `monkeypatch` undoes it) so that each hook call that runs is seen."""
        call, fired = HookRunner.call, self.fired

        def observed(runner: HookRunner, hook: str, chain: Any) -> Any:
            return _Observed(call(runner, hook, chain), runner, hook, fired)

        monkeypatch.setattr(HookRunner, "call", observed)

    def note(self, hook: str) -> None:
        """A plugin's implementation of the registration or CLI hook `hook` was called."""
        if hook not in NOTED_HOOKS:
            raise ValueError(f"{hook!r} is no registration or CLI hook (those are {', '.join(sorted(NOTED_HOOKS))}); "
                             "a lifecycle hook is seen when it runs, not noted")
        self.fired.add(hook)

    def missing(self, named: Iterable[str]) -> list[str]:
        """The hooks of `named` that were not fired."""
        return sorted(set(named) - self.fired)


class _Observed:
    """A hook call that notes its hook as fired when it runs with a callback to reach."""

    __slots__ = ("_call", "_runner", "_hook", "_fired")

    def __init__(self, call: Any, runner: HookRunner, hook: str, fired: set[str]) -> None:
        self._call, self._runner, self._hook, self._fired = call, runner, hook, fired

    def __repr__(self) -> str:
        return repr(self._call)

    def _runs(self) -> None:
        if self._runner.has(self._hook):
            self._fired.add(self._hook)

    def run(self) -> Any:
        self._runs()
        return self._call.run()

    async def arun(self) -> Any:
        self._runs()
        return await self._call.arun()
