"""Where a run's answer goes: Hermes' `deliver` values, sent through the running gateway's adapter or
the platform plugin's `standalone_sender_fn`, and retried with backoff when that fails.

`deliver` is comma-separated targets: `local` (the output file only), `origin` (the chat the job
was made in), `<platform>` (its home channel: the variable the platform registered as
`cron_deliver_env_var`, else `<PLATFORM>_HOME_CHANNEL`, else `platforms.<name>.home_channel`) or
`<platform>:<chat id>[:<thread id>]`. A failed send is recorded on the job (`last_delivery_error`)
and queued in `cron/deliveries.json`; each tick retries what is due, waiting twice as long each
time (1 minute up to an hour), and gives up after `MAX_ATTEMPTS`, saying so on the job.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from hermes_core import PluginManager
from hermes_core.hosting import locked, read_json, write_json

__all__ = ["DeliveryError", "Live", "MAX_ATTEMPTS", "Outbox", "Target", "live_sender", "send", "targets", "wrapped"]

MAX_ATTEMPTS = 8
FIRST_RETRY, LAST_RETRY = 60.0, 3600.0
# (platform, chat id, thread id, text) -> whether a live adapter took it (False: none is running for it)
Live = Callable[[str, str, "str | None", str], bool]


class DeliveryError(Exception):
    """A target the answer could not be sent to (the message says why)."""


@attrs.frozen
class Target:
    platform: str
    chat_id: str
    thread_id: str | None = None

    def __str__(self) -> str:
        return f"{self.platform}:{self.chat_id}" + (f":{self.thread_id}" if self.thread_id else "")


def live_sender(send_live: Callable[..., bool]) -> Live:
    """A `Live` over a running gateway's `send_live`: its failures as `DeliveryError`s."""

    def live(platform: str, chat_id: str, thread_id: str | None, text: str) -> bool:
        try:
            return send_live(platform, chat_id, text, thread_id)
        except Exception as exc:  # noqa: BLE001 - the adapter's failure is this delivery's
            raise DeliveryError(f"{platform}:{chat_id}: {type(exc).__name__}: {exc}") from None

    return live


def wrapped(job: dict[str, Any], text: str) -> str:
    """Hermes' frame around a delivered answer."""
    name = job.get("name", job["id"])
    return (f"Cronjob Response: {name}\n(job_id: {job['id']})\n-------------\n\n{text}\n\n"
            f'To stop or manage this job, send me a new message (e.g. "stop reminder {name}").')


def _home(manager: PluginManager, platform: str) -> tuple[str, str | None]:
    from hermes_core.gateway.readiness import readiness

    entry = manager.platforms.get(platform)
    variable = (entry.cron_deliver_env_var if entry is not None else "") or f"{platform.upper()}_HOME_CHANNEL"
    chat = os.environ.get(variable, "").strip()
    if chat:
        return chat, os.environ.get(f"{variable.removesuffix('_CHANNEL').removesuffix('_ROOM')}_THREAD_ID") or None
    if entry is not None:
        home = readiness(entry, manager.config).config.home_channel
        if home is not None and home.chat_id:
            return str(home.chat_id), getattr(home, "thread_id", None)
    raise DeliveryError(f"{platform} has no home channel: set {variable} (or platforms.{platform}.home_channel)")


def targets(manager: PluginManager, job: dict[str, Any]) -> list[Target]:
    """The targets of a job's `deliver` ([] for local)."""
    found: list[Target] = []
    for token in str(job.get("deliver") or "local").split(","):
        token = token.strip()
        if not token or token == "local":
            continue
        if token == "origin":
            origin = job.get("origin") or {}
            if origin.get("platform") and origin.get("chat_id"):
                found.append(Target(str(origin["platform"]), str(origin["chat_id"]), origin.get("thread_id") or None))
            continue
        platform, _, rest = token.partition(":")
        if rest:
            chat, _, thread = rest.partition(":")
            found.append(Target(platform, chat, thread or None))
        else:
            found.append(Target(platform, *_home(manager, platform)))
    return list(dict.fromkeys(found))


def send(manager: PluginManager, target: Target, text: str, live: Live | None = None) -> None:
    """Send `text` to `target`: the running gateway's adapter when it has one, else the platform's
    `standalone_sender_fn`; `DeliveryError` saying why not."""
    if live is not None and live(target.platform, target.chat_id, target.thread_id, text):
        return
    entry = manager.platforms.get(target.platform)
    if entry is None:
        raise DeliveryError(f"no platform {target.platform!r} is registered (install or enable its plugin)")
    sender = entry.standalone_sender_fn
    if sender is None:
        raise DeliveryError(f"{target.platform} has no standalone sender: it delivers only while "
                            "`hermes gateway run` runs")
    from hermes_core.gateway.readiness import readiness

    config = readiness(entry, manager.config).config
    try:
        result = sender(config, target.chat_id, text, thread_id=target.thread_id)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
    except Exception as exc:  # noqa: BLE001 - a plugin's failure is this delivery's
        raise DeliveryError(f"{target}: {type(exc).__name__}: {exc}") from None
    if isinstance(result, dict) and (result.get("error") or result.get("success") is False):
        raise DeliveryError(f"{target}: {result.get('error') or 'the sender said it failed'}")
    if result is False:
        raise DeliveryError(f"{target}: the sender said it failed")


async def _awaited(result: Any) -> Any:
    return await result


class Outbox:
    """The sends waiting for another attempt: `cron/deliveries.json`."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / "cron" / "deliveries.json"

    def _read(self) -> list[dict[str, Any]]:
        try:
            data = read_json(self.path)
        except (OSError, ValueError):  # none yet, or unreadable: nothing is waiting that can be sent
            return []
        return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []

    def add(self, job_id: str, target: Target, text: str, error: str, now: dt.datetime) -> None:
        item = {"job_id": job_id, "platform": target.platform, "chat_id": target.chat_id,
                "thread_id": target.thread_id, "text": text, "attempts": 1, "last_error": error,
                "next_attempt_at": (now + dt.timedelta(seconds=FIRST_RETRY)).timestamp()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.path):
            write_json(self.path, [*self._read(), item], mode=0o600)

    def retry(self, attempt: Callable[[Target, str], None], now: dt.datetime,
              report: Callable[[str, str | None], None]) -> None:
        """Try again each send that is due; `report(job_id, error)` after each (None: delivered;
        an error ending in "gave up...": dropped after `MAX_ATTEMPTS`)."""
        if not self.path.exists():
            return
        with locked(self.path):
            items, kept = self._read(), []
            for item in items:
                if float(item.get("next_attempt_at", 0)) > now.timestamp():
                    kept.append(item)
                    continue
                target = Target(str(item["platform"]), str(item["chat_id"]), item.get("thread_id"))
                try:
                    attempt(target, str(item.get("text", "")))
                except DeliveryError as exc:
                    tries = int(item.get("attempts", 1)) + 1
                    if tries >= MAX_ATTEMPTS:
                        report(str(item["job_id"]), f"gave up after {tries} attempts: {exc}")
                        continue
                    delay = min(FIRST_RETRY * 2 ** (tries - 1), LAST_RETRY)
                    kept.append({**item, "attempts": tries, "last_error": str(exc),
                                 "next_attempt_at": now.timestamp() + delay})
                    report(str(item["job_id"]), str(exc))
                else:
                    report(str(item["job_id"]), None)
            write_json(self.path, kept, mode=0o600)
