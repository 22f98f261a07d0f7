"""This server as one host of many (`hermes serve` on several machines, one shared database): its
id in the host registry, its heartbeat while it serves (every third of `state.lease_seconds`), and
the runs of hosts that stopped answering (no beat for twice the lease) ended as failed, with the
reason, so that no client waits on a run nobody runs.

With no `state.url` the registry is `hosts.db` under the home: hosts sharing one home (or one
host restarted after a crash) end each other's runs the same way.

A host judges the others only once it has itself beaten without a gap for twice the lease: after
the database was down (nobody could beat) the others get the time to beat again before anyone
takes them for gone.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from hermes_core.hosting import Heartbeat, Hosts, StateUrl, host_id

from .store import ApiStore

__all__ = ["Fleet"]

log = logging.getLogger("hermes.api_server")


class _Beats(Hosts):
    """The host registry, remembering since when this host's beats succeed without a gap."""

    steady_since: float | None = None

    def register(self, kind: str, *, ident: str | None = None) -> str:
        registered = super().register(kind, ident=ident)
        self.steady_since = time.monotonic()
        return registered

    def beat(self, ident: str) -> None:
        try:
            super().beat(ident)
        except BaseException:
            self.steady_since = None
            raise
        if self.steady_since is None:
            self.steady_since = time.monotonic()


class Fleet:
    """The host this server is, and the liveness of the others."""

    def __init__(self, home: Path, url: StateUrl | None, *, lease: float) -> None:
        self.hosts = _Beats(home, url=url)
        self.ident = host_id()
        self.lease = lease
        self._heartbeat: Heartbeat | None = None

    @property
    def registered(self) -> bool:
        return self._heartbeat is not None

    def start(self) -> None:
        """Register this host and beat until `stop()` (a `StateStoreError` when the store cannot be
        reached: called again by the next sweep, and before a run starts)."""
        if self._heartbeat is not None:
            return
        self.hosts.register("serve", ident=self.ident)
        self._heartbeat = Heartbeat(self.hosts, self.ident, every=self.lease / 3)
        self._heartbeat.__enter__()

    def stop(self) -> None:
        """Stop beating and record the stop: what this host held is free at once."""
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None:
            heartbeat.__exit__(None, None, None)

    def gone(self, hosts: list[str]) -> set[str]:
        """Those of `hosts` (never this one) that stopped, or beat last more than twice the lease ago."""
        steady = self.hosts.steady_since
        if steady is None or time.monotonic() - steady < 2 * self.lease:
            return set()  # this host's own view is not to be trusted yet
        others = {host for host in hosts if host != self.ident}
        return others - self.hosts.alive(others, within=2 * self.lease) if others else set()

    def reap(self, store: ApiStore, run_id: str | None = None) -> list[str]:
        """End the unfinished runs (or `run_id` alone) whose host is gone; the ids ended here."""
        if run_id is not None:
            holder = store.run_host(run_id)
            held = {} if holder is None else {holder: [run_id]}
        else:
            held = store.orphans(self.ident)
        ended: list[str] = []
        for host in sorted(self.gone(list(held))):
            for orphan in held[host]:
                if host:
                    reason, status = f"the host running it ({host}) stopped answering", "failed"
                else:  # stored by a version that recorded no host: its server stopped
                    reason, status = "its server stopped before it ended", "interrupted"
                if store.end_orphan(orphan, host, reason, status=status):
                    log.warning("run %s: %s; marked %s", orphan, reason, status)
                    ended.append(orphan)
        return ended
