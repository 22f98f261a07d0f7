"""Getting the distributions of an install without installing them: pip resolves (a dry run, wheels
only, so no package's code runs) and downloads into a temporary folder; a sdist, a project folder
or a git URL is read by the scan before it is built, since building runs its setup code.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

import attrs

from .._errors import HermesError
from .findings import Finding

__all__ = ["FetchError", "Fetched", "Source", "fetch", "run_pip", "sha256_of", "classify"]


class FetchError(HermesError):
    """A distribution could not be resolved, downloaded or built; `output` is pip's own."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


@attrs.frozen
class Fetched:
    """One downloaded distribution file, not installed."""

    name: str
    version: str
    path: Path
    sha256: str
    url: str | None
    requested: bool
    source: Source | None = None  # what a wheel built here was built from


@attrs.frozen
class Source:
    """A sdist, project folder or git checkout a wheel was built from."""

    kind: str  # sdist | folder | git
    spec: str
    sha256: str | None = None  # of the sdist
    commit: str | None = None  # of the git checkout


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def run_pip(args: Sequence[str], what: str, python: Path | None = None) -> subprocess.CompletedProcess[str]:
    """pip of the running interpreter, on `python`'s environment when given; FetchError naming `what`."""
    command = [sys.executable, "-m", "pip", *(["--python", str(python)] if python else []), *args,
               "--disable-pip-version-check"]
    result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        errors = [line.removeprefix("ERROR:").strip() for line in result.stderr.splitlines()
                  if line.startswith("ERROR:")]
        why = f": {errors[0]}" if errors else ""
        raise FetchError(f"pip could not {what} (exit {result.returncode}){why}; pip's output is above",
                         (result.stdout + result.stderr).rstrip())
    return result


def classify(spec: str) -> str:
    """`wheel`, `sdist`, `folder`, `git` or `requirement`."""
    if spec.startswith("git+"):
        return "git"
    path = Path(spec)
    if path.is_dir():
        return "folder"
    if spec.endswith(".whl"):
        return "wheel"
    if spec.endswith((".tar.gz", ".zip", ".tgz")) and path.exists():
        return "sdist"
    return "requirement"


def _git_checkout(spec: str, into: Path) -> tuple[Path, str]:
    """Clone `git+URL[@REF][#...]` into `into` (nothing in it runs); the folder and its commit id."""
    url = spec.removeprefix("git+").split("#", 1)[0]
    ref = None
    if "@" in urlsplit(url).path:
        url, ref = url.rsplit("@", 1)
    folder = into / "checkout"
    for args in (["clone", "--quiet", "--no-recurse-submodules", url, str(folder)],
                 *([["-C", str(folder), "checkout", "--quiet", ref]] if ref else [])):
        result = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], capture_output=True, text=True,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise FetchError(f"git could not fetch {spec}: {result.stderr.strip()[-300:]}")
    commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return folder, commit


def _build(spec: str, kind: str, work: Path, python: Path | None,
           check_source: Callable[[str, Path, str], bool]) -> tuple[str, Source]:
    """Build a wheel of a sdist, folder or git URL once `check_source` (given its scan) allows it."""
    source = Source(kind, spec)
    where = Path(spec)
    if kind == "git":
        where, commit = _git_checkout(spec, work)
        source = attrs.evolve(source, commit=commit)
    elif kind == "sdist":
        source = attrs.evolve(source, sha256=sha256_of(where))
    if not check_source(spec, where, kind):
        raise FetchError(f"{spec} was not built: nothing was installed")
    out = work / "built"
    run_pip(["wheel", "--quiet", "--no-deps", "-w", str(out), str(where)], f"build {spec}", python)
    wheels = sorted(out.glob("*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        raise FetchError(f"building {spec} made no wheel")
    return str(wheels[-1]), source


def fetch(specs: Sequence[str], work: Path, *, python: Path | None = None, user: bool = False,
          upgrade: bool = False, check_source: Callable[[str, Path, str], bool] = lambda *a: True) -> list[Fetched]:
    """Resolve `specs` against the target environment and download what pip would install into
    `work`: the plugin and the dependencies the environment lacks. Wheels only; nothing installed."""
    targets: list[str] = []
    built: dict[str, Source] = {}
    for spec in specs:
        kind = classify(spec)
        if kind in ("sdist", "folder", "git"):
            wheel, source = _build(spec, kind, work / f"src{len(built)}", python, check_source)
            built[Path(wheel).name] = source
            targets.append(wheel)
        else:
            targets.append(str(Path(spec).resolve()) if kind == "wheel" else spec)
    report = work / "report.json"
    try:
        run_pip(["install", "--dry-run", "--quiet", "--only-binary", ":all:", "--report", str(report),
                 *(["--user"] if user else []), *(["--upgrade"] if upgrade else []), *targets],
                f"resolve {' '.join(specs)}", python)
    except FetchError as exc:
        if "No matching distribution" not in exc.output:
            raise
        raise FetchError(f"{exc} (only wheels are taken from an index, since building a sdist runs its code: "
                         "download the sdist and install its path, which is scanned before it is built)",
                         exc.output) from None
    items = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    downloads = work / "files"
    downloads.mkdir(exist_ok=True)
    remote = [item["download_info"]["url"] for item in items if not item["download_info"]["url"].startswith("file:")]
    if remote:
        run_pip(["download", "--quiet", "--no-deps", "--only-binary", ":all:", "-d", str(downloads), *remote],
                "download " + " ".join(u.rsplit("/", 1)[-1] for u in remote), python)
    fetched = []
    for item in items:
        url = item["download_info"]["url"]
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        path = downloads / filename
        if url.startswith("file:"):
            shutil.copyfile(unquote(urlsplit(url).path), path)
        if not path.exists():
            raise FetchError(f"pip resolved {filename} but did not download it")
        digest = sha256_of(path)
        expected = item["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256")
        if expected and expected != digest:
            raise FetchError(f"{filename}: the index said sha256 {expected}, the file downloaded has {digest}: "
                             "nothing was installed")
        meta = item["metadata"]
        fetched.append(Fetched(meta["name"], meta["version"], path, digest,
                               None if url.startswith("file:") and filename in built else url,
                               bool(item.get("requested")), built.get(filename)))
    return fetched


def upload_time(index: str, name: str, filename: str) -> str | None:
    """The upload time the index's JSON simple API (PEP 691/700) gives `filename`; None when unknown."""
    import urllib.request

    if not index.startswith("https://"):
        return None
    request = urllib.request.Request(f"{index.rstrip('/')}/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 - https only, above
            files = json.loads(answer.read()).get("files", [])
    except (OSError, ValueError):
        return None
    return next((f.get("upload-time") for f in files if f.get("filename") == filename), None)


def index_of(url: str | None) -> str | None:
    """The index a file's URL came from, where it can be told: PyPI's files host."""
    if url and urlsplit(url).hostname == "files.pythonhosted.org":
        return "https://pypi.org/simple"
    return None


def findings_of(fetched: Sequence[Fetched], guarddog: str = "note") -> list[Finding]:
    """Our rules on every downloaded file; GuardDog too on the requested ones, when it is installed."""
    from . import guarddog as dog
    from .scan import scan_dist

    found = [f for item in fetched for f in scan_dist(item.path, item.name, requested=item.requested)]
    return found + [f for item in fetched if item.requested for f in dog.scan(item.path, item.name, guarddog)]
