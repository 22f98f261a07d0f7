"""`$HERMES_HOME/plugins.lock`: the files every installed plugin came from, in PEP 751's
`pylock.toml` format (name, version, index, each file's name, url or path, sha256 and upload time),
plus hermes-core's own table per package (`[packages.tool.hermes-core]`: whether the user asked
for it, the sha256 of its installed RECORD, the environment of an isolated install)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from .._errors import HermesError
from .._files import write_atomic

__all__ = ["LOCK_FILE", "LockError", "LockedFile", "LockedPackage", "read_lock", "write_lock", "merge", "changes"]

LOCK_FILE = "plugins.lock"


class LockError(HermesError):
    """plugins.lock cannot be read, or what it pins cannot be had."""


@attrs.frozen
class LockedFile:
    """One distribution file: a `wheel` or an `sdist`."""

    name: str
    sha256: str
    kind: str = "wheel"
    url: str | None = None
    path: str | None = None
    upload_time: str | None = None


@attrs.frozen
class LockedPackage:
    name: str
    version: str
    files: tuple[LockedFile, ...] = ()
    index: str | None = None
    vcs: tuple[str, str] | None = None  # (url, commit id) of a package built from git
    requested: bool = False
    record_sha256: str | None = None
    environment: str | None = None
    # PEP 751's attestation-identities: the publishers its verified provenance names; None: not looked at
    publishers: tuple[Mapping[str, str], ...] | None = None


def _s(value: str) -> str:
    return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's


def _file_lines(f: LockedFile) -> list[str]:
    lines = [f"name = {_s(f.name)}"]
    lines += [f"url = {_s(f.url)}"] if f.url else []
    lines += [f"path = {_s(f.path)}"] if f.path and not f.url else []
    lines += [f"upload-time = {f.upload_time}"] if f.upload_time else []
    return [*lines, f"hashes = {{sha256 = {_s(f.sha256)}}}"]


def dumps(packages: Iterable[LockedPackage]) -> str:
    out = ['lock-version = "1.0"', 'created-by = "hermes-core"', ""]
    for p in sorted(packages, key=lambda p: p.name):
        out += ["[[packages]]", f"name = {_s(p.name)}", f"version = {_s(p.version)}"]
        out += [f"index = {_s(p.index)}"] if p.index else []
        out.append("")
        if p.vcs:
            out += ["[packages.vcs]", 'type = "git"', f"url = {_s(p.vcs[0])}", f"commit-id = {_s(p.vcs[1])}", ""]
        for f in p.files:
            out += [*(["[[packages.wheels]]"] if f.kind == "wheel" else ["[packages.sdist]"]), *_file_lines(f), ""]
        for publisher in p.publishers or ():
            out += ["[[packages.attestation-identities]]", *(f"{k} = {_s(v)}" for k, v in publisher.items()), ""]
        out += ["[packages.tool.hermes-core]", f"requested = {'true' if p.requested else 'false'}"]
        out += [f"record-sha256 = {_s(p.record_sha256)}"] if p.record_sha256 else []
        out += [f"environment = {_s(p.environment)}"] if p.environment else []
        out.append("")
    return "\n".join(out)


def _toml(where: Path) -> Any:
    """tomllib (Python 3.11+), else tomli, its backport."""
    import importlib

    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise LockError(f"reading {where} needs Python 3.11 or the tomli package: pip install tomli")


def _load(text: str, where: Path) -> dict[str, Any]:
    toml = _toml(where)
    try:
        data: dict[str, Any] = toml.loads(text)
        return data
    except toml.TOMLDecodeError as exc:
        raise LockError(f"{where} is not valid TOML ({exc}): restore it, or delete it and install again") from None


def _time(value: Any) -> str | None:
    if value is None:
        return None
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text.replace("+00:00", "Z")


def read_lock(path: Path) -> list[LockedPackage]:
    """The packages `path` pins; [] when there is no lock yet."""
    if not path.exists():
        return []
    doc = _load(path.read_text(encoding="utf-8"), path)
    packages = []
    try:
        for raw in doc.get("packages", []):
            files = [LockedFile(w["name"], w["hashes"]["sha256"], "wheel", w.get("url"), w.get("path"),
                                _time(w.get("upload-time"))) for w in raw.get("wheels", [])]
            if "sdist" in raw:
                s = raw["sdist"]
                files.append(LockedFile(s["name"], s["hashes"]["sha256"], "sdist", s.get("url"), s.get("path"),
                                        _time(s.get("upload-time"))))
            vcs = (raw["vcs"]["url"], raw["vcs"]["commit-id"]) if "vcs" in raw else None
            tool = raw.get("tool", {}).get("hermes-core", {})
            packages.append(LockedPackage(raw["name"], raw["version"], tuple(files), raw.get("index"), vcs,
                                          bool(tool.get("requested")), tool.get("record-sha256"),
                                          tool.get("environment"),
                                          tuple(dict(i) for i in raw.get("attestation-identities", ()))))
    except (KeyError, TypeError) as exc:
        raise LockError(f"{path} lacks {exc} in a package: restore it, or delete it and install again") from None
    return packages


def write_lock(path: Path, packages: Iterable[LockedPackage]) -> None:
    write_atomic(path, dumps(packages))


def merge(old: Iterable[LockedPackage], new: Iterable[LockedPackage]) -> list[LockedPackage]:
    """`old` with each package of `new` in place of the one of the same name (a requested mark kept)."""
    from .names import canonical

    merged = {canonical(p.name): p for p in old}
    for p in new:
        before = merged.get(canonical(p.name))
        known = {(f.name, f.sha256): f for f in before.files} if before else {}
        files = tuple(_kept(f, known[(f.name, f.sha256)]) if (f.name, f.sha256) in known else f for f in p.files)
        merged[canonical(p.name)] = attrs.evolve(
            p, files=files, index=p.index or (before.index if before else None),
            requested=p.requested or bool(before and before.requested),
            publishers=p.publishers if p.publishers is not None or before is None else before.publishers)
    return list(merged.values())


def _kept(new: LockedFile, old: LockedFile) -> LockedFile:
    """The same file installed again (`--locked`): where it was had from and its upload time stay."""
    return attrs.evolve(new, url=old.url or new.url, path=old.path or new.path,
                        upload_time=new.upload_time or old.upload_time)


def changes(old: Iterable[LockedPackage], new: Iterable[tuple[str, str, str, bool]]) -> list[str]:
    """What installing `new` ((name, version, sha256, requested) each) changes against the lock `old`,
    one line each: a new package, another version, or the same version from other bytes."""
    from .names import canonical

    before = {canonical(p.name): p for p in old}
    lines = []
    for name, version, sha256, requested in new:
        was = before.get(canonical(name))
        if was is None:
            lines.append(f"new {'plugin' if requested else 'dependency'} {name} {version}")
        elif canonical(was.version) != canonical(version):
            lines.append(f"update {name} {was.version} -> {version}")
        elif was.files and all(f.sha256 != sha256 for f in was.files) and not was.vcs:
            lines.append(f"changed {name} {version}: the same version from other bytes (sha256 "
                         f"{was.files[0].sha256[:16]}... locked, {sha256[:16]}... now)")
    return lines
