"""`hermes plugins verify`: the installed files of each locked distribution against its RECORD
(the sha256 pip wrote for every file at install), and that RECORD against the sha256 the lock took
of it right after the install, so that an edited file, or an edited file and RECORD, is named."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from .lock import LockedPackage
from .names import canonical

__all__ = ["find_dist", "record_digest", "record_sha256", "problems"]


def record_digest(data: bytes) -> str:
    """The sha256 of `data` as a wheel's RECORD writes it (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def find_dist(name: str, environment: str | None = None) -> metadata.Distribution | None:
    """The installed distribution `name`: in the environment hermes runs in, or in the isolated
    environment folder `environment`."""
    import importlib

    importlib.invalidate_caches()
    if environment is None:
        found = metadata.distributions(name=name)
    else:
        sites = [str(p) for p in Path(environment).glob("lib/python3*/site-packages")]
        found = metadata.distributions(name=name, path=sites)
    return next(iter(found), None)


def _record(dist: metadata.Distribution) -> Path | None:
    files = dist.files or []
    record = next((f for f in files if f.name == "RECORD" and f.parent.name.endswith(".dist-info")), None)
    return Path(str(record.locate())) if record is not None else None


def record_sha256(dist: metadata.Distribution) -> str | None:
    record = _record(dist)
    return hashlib.sha256(record.read_bytes()).hexdigest() if record and record.exists() else None


def problems(package: LockedPackage) -> Iterator[str]:
    """What differs between `package` as locked and as installed, one line each (none: it verifies)."""
    dist = find_dist(package.name, package.environment)
    if dist is None:
        yield f"{package.name} {package.version}: not installed"
        return
    if canonical(dist.version) != canonical(package.version):
        yield f"{package.name}: {dist.version} is installed, plugins.lock pins {package.version}"
        return
    record = record_sha256(dist)
    if package.record_sha256 and record != package.record_sha256:
        yield f"{package.name} {package.version}: its RECORD was changed since the install (the list of its files " \
              "and their hashes): reinstall it with `hermes plugins install --locked`"
    for file in dist.files or []:
        if file.hash is None or file.hash.mode != "sha256":
            continue
        path = Path(str(file.locate()))
        if not path.exists():
            yield f"{package.name} {package.version}: {file} is missing"
            continue
        if record_digest(path.read_bytes()) != file.hash.value:
            yield f"{package.name} {package.version}: {file} was modified since the install ({path})"
