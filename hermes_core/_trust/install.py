"""Trust at install, as a library: `check` (download and scan, nothing installed), `install_files`
(exactly the checked files, by hash), `fetch_locked` (the files plugins.lock pins, or a refusal
naming the one whose hash differs) and `lock_entries` (what to record once installed)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

import attrs

from .fetch import Fetched, FetchError, Source, fetch, findings_of, index_of, run_pip, sha256_of, upload_time
from .findings import Finding, verdict
from .lock import LockedFile, LockedPackage, LockError
from .provenance import Attested
from .verify import find_dist, record_sha256

__all__ = ["Checked", "check", "check_locked", "install_files", "lock_entries"]


@attrs.frozen
class Checked:
    """The downloaded files of an install and what the checks found in them."""

    fetched: tuple[Fetched, ...]
    findings: tuple[Finding, ...]

    @property
    def verdict(self) -> str:
        return verdict(self.findings)


def check(specs: Sequence[str], work: Path, *, python: Path | None = None, user: bool = False,
          upgrade: bool = False, check_source: Callable[[str, Path, str], bool] = lambda *a: True,
          guarddog: str = "note") -> Checked:
    """Download what installing `specs` would install into `work` and scan it; nothing is installed.
    `guarddog`: off, note or ask (`plugins.guarddog`)."""
    fetched = fetch(specs, work, python=python, user=user, upgrade=upgrade, check_source=check_source)
    return Checked(tuple(fetched), tuple(findings_of(fetched, guarddog)))


def check_locked(packages: Sequence[LockedPackage], work: Path, *, python: Path | None = None,
                 guarddog: str = "note") -> Checked:
    """Get exactly the files `packages` pin into `work` and scan them; LockError naming a file whose
    sha256 differs from the lock's."""
    files = work / "files"
    files.mkdir(parents=True, exist_ok=True)
    fetched = []
    for package in packages:
        if package.vcs or any(f.kind == "sdist" for f in package.files):
            fetched.append(_rebuild(package, work, python))
            continue
        wheel = next((f for f in package.files if f.kind == "wheel"), None)
        if wheel is None:
            raise LockError(f"plugins.lock pins no file for {package.name} {package.version}: install it again "
                            "without --locked")
        path = _get(wheel, package, files, python)
        fetched.append(Fetched(package.name, package.version, path, wheel.sha256, wheel.url, package.requested))
    return Checked(tuple(fetched), tuple(findings_of(fetched, guarddog)))


def _get(pinned: LockedFile, package: LockedPackage, into: Path, python: Path | None) -> Path:
    """The file `pinned` (from its path, its URL, or the configured index), its sha256 checked."""
    target = into / pinned.name
    if pinned.path and Path(pinned.path).exists():
        shutil.copyfile(pinned.path, target)
    elif pinned.url and pinned.url.startswith("file:"):
        shutil.copyfile(unquote(urlsplit(pinned.url).path), target)
    else:
        what = pinned.url or f"{package.name}=={package.version}"
        try:
            run_pip(["download", "--quiet", "--no-deps", "--only-binary", ":all:", "-d", str(into), what],
                    f"download {pinned.name}", python)
        except FetchError as exc:
            raise FetchError(f"{pinned.name} (pinned in plugins.lock) could not be had: {exc}", exc.output) from None
    if not target.exists():
        raise LockError(f"{pinned.name} (pinned in plugins.lock) is not what the index serves for "
                        f"{package.name} {package.version} here: nothing was installed")
    digest = sha256_of(target)
    if digest != pinned.sha256:
        raise LockError(f"{pinned.name}: its sha256 is {digest}, plugins.lock pins {pinned.sha256}: "
                        "the file differs from the one locked; nothing was installed")
    return target


def _rebuild(package: LockedPackage, work: Path, python: Path | None) -> Fetched:
    """A package the lock records as built from a sdist (by its hash) or a git commit: built again."""
    sdist = next((f for f in package.files if f.kind == "sdist"), None)
    if sdist is not None:
        spec = str(_get(sdist, package, work / "files", python))
    else:
        assert package.vcs is not None
        spec = f"git+{package.vcs[0]}@{package.vcs[1]}"
    fetched = fetch([spec], work / f"rebuild-{package.name}", python=python)
    built = next((f for f in fetched if f.source is not None), None)
    if built is None:
        raise LockError(f"rebuilding {package.name} from plugins.lock made no wheel")
    if package.vcs and built.source and built.source.commit != package.vcs[1]:
        raise LockError(f"{package.vcs[0]} gave commit {built.source.commit}, plugins.lock pins {package.vcs[1]}")
    return attrs.evolve(built, requested=package.requested)


def install_files(fetched: Sequence[Fetched], work: Path, *, python: Path | None = None, user: bool = False,
                  upgrade: bool = False) -> None:
    """`pip install --no-deps --require-hashes --no-index` of exactly `fetched`: no other file can come in."""
    if not fetched:
        return
    requirements = work / "checked-requirements.txt"
    requirements.write_text("".join(f"{f.path} --hash=sha256:{f.sha256}\n" for f in fetched), encoding="utf-8")
    run_pip(["install", "--quiet", "--no-deps", "--require-hashes", "--no-index", *(["--user"] if user else []),
             *(["--upgrade"] if upgrade else []), "-r", str(requirements)],
            "install " + " ".join(f.path.name for f in fetched), python)


def lock_entries(fetched: Sequence[Fetched], *, environment: str | None = None, online: bool = True,
                 provenance: Mapping[str, Attested] | None = None) -> list[LockedPackage]:
    """What plugins.lock records of `fetched`, now installed (the sha256 of each one's RECORD taken now),
    with the publishers `provenance` (by file name) verified; where it says nothing, what the lock had stays."""
    entries = []
    for item in fetched:
        dist = find_dist(item.name, environment)
        record = record_sha256(dist) if dist is not None else None
        found = (provenance or {}).get(item.path.name)
        index = index_of(item.url) or (found.index if found else None)
        files: tuple[LockedFile, ...]
        vcs = None
        if item.source is not None:
            files, vcs = _source_files(item.source)
        else:
            local = item.url is None or item.url.startswith("file:")
            when = upload_time(index, item.name, item.path.name) if index and online else None
            files = (LockedFile(item.path.name, item.sha256, "wheel", None if local else item.url,
                                str(_local_path(item)) if local else None, when),)
        publishers = None if found is None or found.status == "unchecked" else found.publishers
        entries.append(LockedPackage(item.name, item.version, files, index, vcs, item.requested, record, environment,
                                     publishers))
    return entries


def _local_path(item: Fetched) -> Path:
    return Path(unquote(urlsplit(item.url).path)) if item.url else item.path


def _source_files(source: Source) -> tuple[tuple[LockedFile, ...], tuple[str, str] | None]:
    if source.kind == "git":
        url = source.spec.removeprefix("git+").split("#", 1)[0]
        if "@" in urlsplit(url).path:
            url = url.rsplit("@", 1)[0]
        return (), (url, source.commit or "")
    if source.kind == "sdist" and source.sha256:
        path = Path(source.spec).resolve()
        return (LockedFile(path.name, source.sha256, "sdist", None, str(path)),), None
    return (), None  # a project folder: nothing that another machine could fetch is pinned
