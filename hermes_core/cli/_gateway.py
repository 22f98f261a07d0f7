"""`hermes gateway run|status` (the messaging gateway) and `hermes pairing` (letting senders in).
Imported only when one of them is asked for."""

from __future__ import annotations

import time
from typing import Any

import click

from ._common import echo_json, echo_table, manager


@click.group()
def gateway() -> None:
    """The messaging gateway: platform plugins connect the agent to chat platforms."""


def _say(line: str) -> None:
    click.echo(f"hermes: gateway: {line}", err=True)


@gateway.command()
@click.pass_context
def run(ctx: click.Context) -> None:
    """Connect every enabled platform and answer its messages until Ctrl-C or SIGTERM.

    One conversation per chat (as Hermes keys it), resumed after a restart; senders are let in by
    the platform's allowlist variables, GATEWAY_ALLOW_ALL_USERS, or a pairing code
    (`hermes pairing approve`).
    """
    from .. import config_keys
    from ..cron import Scheduler, live_sender, now
    from ..gateway import Gateway
    from ._agent import NO_MODEL

    host = manager(ctx)
    if not host.config.read(config_keys.MODEL_MODEL):
        raise click.ClickException(NO_MODEL)
    now()  # a test clock (HERMES_CRON_NOW) it cannot use is said before anything starts
    gateway = Gateway(host, say=_say)

    # as Hermes' gateway ticks cron, and once at start: a restart does not delay what is due
    with Scheduler(host, say=_say, live=live_sender(gateway.send_live), kind="gateway") as scheduler:
        gateway.every(host.config.read(config_keys.CRON_TICK_INTERVAL), scheduler.tick, at_start=True)
        code = gateway.run()
    ctx.exit(code)


@gateway.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """The registered platforms: whether each is ready to start and, while the gateway runs, its state."""
    from ..gateway import read_status
    from ..gateway.readiness import readiness

    host = manager(ctx)
    running = read_status(host.home)
    live = running["platforms"] if running else {}
    rows: list[dict[str, Any]] = []
    for entry in host.platforms.all():
        plan = readiness(entry, host.config)
        state = live.get(entry.name, {})
        rows.append({"platform": entry.name, "label": entry.label, "plugin": entry.plugin_id,
                     "ready": plan.ready, "state": state.get("state") or ("ready" if plan.ready else
                                                                          "not ready" if plan.enabled else "disabled"),
                     "detail": state.get("detail") or plan.why})
    if as_json:
        echo_json({"running": running is not None, "pid": running["pid"] if running else None, "platforms": rows})
        return
    if running:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(running["started_at"]))
        click.echo(f"gateway: running (pid {running['pid']}, since {since}; "
                   f"{running.get('conversations', 0)} conversation(s))")
    else:
        click.echo("gateway: not running (start it with `hermes gateway run`)")
    if not rows:
        click.echo("no messaging platform is registered (install or enable a platform plugin)")
        return
    echo_table(["platform", "plugin", "state", "detail"],
               [[str(r["platform"]), str(r["plugin"]), str(r["state"]), str(r["detail"] or "-")] for r in rows])


@gateway.command()
@click.option("--revoke", "revoked", metavar="RULE", help="Take back the \"always\" approval of RULE.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def approvals(ctx: click.Context, revoked: str | None, as_json: bool) -> None:
    """The rules approved "always" in a chat (/approve always): every gateway of the home (or of the
    shared database) honours them."""
    from ..gateway.state import always_for

    always = always_for(manager(ctx).home)
    if revoked is not None:
        if not always.remove(revoked):
            raise click.ClickException(f"{revoked!r} is not approved always (`hermes gateway approvals` lists them)")
        click.echo(f"revoked {revoked}")
        return
    rules = always.all()
    if as_json:
        echo_json({"always": rules})
    else:
        click.echo("\n".join(rules) if rules else "no rule is approved always")


@click.group()
def pairing() -> None:
    """Let senders in: approve the pairing codes the gateway gives people it does not know."""


@pairing.command()
@click.argument("platform")
@click.argument("code")
def approve(platform: str, code: str) -> None:
    """Let in the sender who was given CODE on PLATFORM."""
    from ..gateway.pairing import PairingStore

    store = PairingStore()
    approved = store.approve_code(platform, code)
    if approved is None:
        until = store.locked_until(platform)
        if until is not None:
            raise click.ClickException(
                f"approvals on {platform} are locked after too many wrong codes until "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(until))}; try again then")
        raise click.ClickException(f"no pending pairing code {code.strip().upper()!r} on {platform} (wrong, used or "
                                   "expired after an hour; `hermes pairing list` shows who is waiting)")
    who = approved["user_id"] + (f" ({approved['user_name']})" if approved.get("user_name") else "")
    click.echo(f"approved {who} on {platform}")


@pairing.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json: bool) -> None:
    """Senders waiting for approval, and those let in."""
    from ..gateway.pairing import PairingStore

    store = PairingStore()
    pending, approved = store.list_pending(), store.list_approved()
    if as_json:
        echo_json({"pending": pending, "approved": approved})
        return
    if pending:
        echo_table(["waiting on", "user", "name", "minutes"],
                   [[p["platform"], p["user_id"], p["user_name"] or "-", str(p["age_minutes"])] for p in pending])
    else:
        click.echo("nobody is waiting for approval")
    if approved:
        echo_table(["approved on", "user", "name"], [[a["platform"], a["user_id"], a["user_name"] or "-"]
                                                      for a in approved])


@pairing.command()
@click.argument("platform")
@click.argument("user_id")
def revoke(platform: str, user_id: str) -> None:
    """Take back USER_ID's approval on PLATFORM."""
    from ..gateway.pairing import PairingStore

    if not PairingStore().revoke(platform, user_id):
        raise click.ClickException(f"{user_id} is not approved on {platform}")
    click.echo(f"revoked {user_id} on {platform}")
