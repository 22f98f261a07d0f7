"""Provenance at `hermes plugins install` (docs/trust.md): each downloaded file's PEP 740
provenance, looked up on the configured indexes and verified, shown; a file whose provenance does
not verify, or whose publisher is not the one plugins.lock pins for its package (or that lacks the
attestation the locked version had), is refused unless `--accept-publisher NAME` accepts it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

__all__ = ["provenance_gate"]


def provenance_gate(fetched: Sequence[Any], locked: Sequence[Any], accept: Sequence[str],
                    python: Path | None) -> tuple[dict[str, Any], str | None]:
    """The provenance of each of `fetched` by file name, shown, and why the install is refused (None: it is not)."""
    from .._trust.names import canonical
    from .._trust.provenance import attested, indexes, judge

    where = indexes(python) if any(f.url and not f.url.startswith("file:") for f in fetched) else []
    pinned = {canonical(p.name): p for p in locked}
    accepted = {canonical(name) for name in accept}
    found, refused, unreachable = {}, [], dict[str, str]()
    for item in fetched:
        result = found[item.path.name] = attested(item, where, unreachable)
        click.echo(f"  {item.name} {item.version}: {result.detail}", err=True)
        before = pinned.get(canonical(item.name))
        problem = judge(item.name, item.version, result, before.publishers if before else None,
                        before.version if before else None)
        if problem and canonical(item.name) in accepted:
            click.echo(f"  accepted by --accept-publisher {item.name}: {problem}", err=True)
        elif problem:
            click.echo(f"  refused: {problem}", err=True)
            refused.append(item.name)
    if refused:
        return found, (f"refused to install {', '.join(refused)}: the provenance above is not what plugins.lock "
                       "pins, or does not verify; nothing was installed. If you trust it, install again with "
                       + " ".join(f"--accept-publisher {name}" for name in refused))
    return found, None
