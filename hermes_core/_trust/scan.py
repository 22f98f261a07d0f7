"""The scan of downloaded distributions (wheels, sdists, a source tree): every Python file read
by our rules (`rules`), the files that run by themselves (`.pth`, a `setup.py` that does more than
describe the package), bundled programs, and a name that imitates a known one. The archive is read
in memory; nothing is extracted, imported or run.
"""

from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from .findings import ASK, NOTE, Finding
from .names import canonical, squatted
from .rules import scan_source

__all__ = ["scan_dist", "scan_tree", "scan_installed", "dist_name", "MAX_FILE"]

MAX_FILE = 2_000_000  # bytes: a larger .py file is named, not parsed
BINARY = (".so", ".pyd", ".dll", ".dylib", ".exe", ".bin")
# .pth files with code that well-known distributions ship, by (distribution, file)
KNOWN_PTH = {("setuptools", "distutils-precedence.pth"), ("hermes-core", "hermes_core_names.pth"),
             ("pywin32", "pywin32.pth"), ("virtualenv", "_virtualenv.pth"), ("coverage", "a1_coverage.pth")}


def members(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each regular file in a wheel, zip sdist or tar sdist."""
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    yield info.filename, archive.read(info) if info.file_size <= MAX_FILE else b""
    else:
        with tarfile.open(path) as tar:
            for member in tar:
                if member.isfile():
                    handle = tar.extractfile(member)
                    yield member.name, handle.read() if handle and member.size <= MAX_FILE else b""


def dist_name(path: Path) -> str:
    """The distribution name in a wheel's or sdist's file name (`hermes_dice-1.2-py3-none-any.whl`)."""
    stem = path.name.removesuffix(".tar.gz").removesuffix(".zip").removesuffix(".whl").removesuffix(".tgz")
    return stem.split("-")[0].replace("_", "-") if path.suffix == ".whl" else stem.rsplit("-", 1)[0]


def scan_dist(path: Path, name: str, *, requested: bool = True, check_name: bool = True) -> list[Finding]:
    """The findings in one distribution file `path` of distribution `name` (`requested`: asked for
    by the user, not pulled in as a dependency; `check_name`: whether `name` is its real name)."""
    found = _scan(members(path), wheel=path.suffix == ".whl", requested=requested, dist=name)
    return _named(found, name, requested, check_name)


def scan_tree(root: Path, name: str) -> list[Finding]:
    """The findings in a source tree (a git checkout, a project folder) before it is built."""
    skip = {".git", ".tox", ".venv", "venv", "node_modules", "__pycache__"}

    def files() -> Iterator[tuple[str, bytes]]:
        for file in sorted(root.rglob("*")):
            rel = file.relative_to(root)
            if file.is_file() and not file.is_symlink() and not skip & set(rel.parts):
                yield rel.as_posix(), file.read_bytes() if file.stat().st_size <= MAX_FILE else b""

    return _named(_scan(files(), wheel=False, requested=True), name, True, False)


def scan_installed(files: list[tuple[str, Path]], name: str) -> list[Finding]:
    """The findings in an installed distribution's files ((path as RECORD names it, where it is) each),
    as `hermes plugins audit` reads them: what is on disk now, not what was downloaded."""

    def read() -> Iterator[tuple[str, bytes]]:
        for rel, path in files:
            if path.is_file() and not rel.startswith(".."):
                yield rel, path.read_bytes() if path.stat().st_size <= MAX_FILE else b""

    return _named(_scan(read(), wheel=True, requested=True, dist=name), name, True)


def _named(findings: list[Finding], name: str, requested: bool, check_name: bool = True) -> list[Finding]:
    imitated = squatted(name) if check_name else None
    if imitated:
        level = ASK if requested else NOTE
        findings.insert(0, Finding(level, "typo-squat", "METADATA", 0,
                                   f"the name {name!r} is one slip away from the known {imitated!r}: check that "
                                   "this is the package you meant"))
    return [Finding(f.level, f.rule, f.file, f.line, f.why, name) for f in findings]


def _scan(files: Iterator[tuple[str, bytes]], *, wheel: bool, requested: bool, dist: str = "") -> list[Finding]:
    findings: list[Finding] = []
    for name, data in files:
        parts = name.split("/")
        base = parts[-1]
        if base.endswith(".py"):
            if not data:
                findings.append(Finding(NOTE, "large-file", name, 0, f"larger than {MAX_FILE} bytes: not read"))
                continue
            text = data.decode("utf-8", "replace")
            found = scan_source(text, name)
            if base == "setup.py" and not wheel:
                found += _setup_findings(text, name)
            findings += found
        elif base.endswith(".pth") and (len(parts) == 1 or (wheel and ".data" in parts[0] and len(parts) == 3)):
            if (canonical(dist), base) in KNOWN_PTH:
                findings.append(Finding(NOTE, "pth-file", name, 0, f"the .pth file {dist} is known to ship"))
            else:
                findings += _pth_findings(data.decode("utf-8", "replace"), name)
        elif base.endswith(BINARY) and requested:
            findings.append(Finding(NOTE, "bundled-binary", name, 0,
                                    "a compiled program or library: its code is not read by the scan"))
    return findings


def _pth_findings(text: str, name: str) -> list[Finding]:
    """A .pth file in site-packages runs its `import` lines at every Python start, in every program."""
    code = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.startswith(("import ", "import\t"))]
    if not code:
        return [Finding(NOTE, "pth-file", name, 0, "a .pth file that only adds folders to sys.path")]
    if name.endswith("-nspkg.pth") and all("types.ModuleType" in line or "importlib" in line for _, line in code):
        return [Finding(NOTE, "pth-file", name, code[0][0], "a namespace-package .pth as setuptools writes them")]
    found = [Finding(ASK, "pth-file", name, code[0][0],
                     "a .pth file with code: it runs at every Python start, in every program of this environment")]
    for number, line in code:
        found += [Finding(f.level, f.rule, name, number, f.why) for f in scan_source(line, name)
                  if f.level != NOTE]
    return found


def _setup_findings(text: str, name: str) -> list[Finding]:
    """A setup.py runs when the sdist is built: installing hooks or network calls there is a post-install step."""
    import ast

    from .taint import NET_ROOTS, dotted

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "cmdclass" and isinstance(node.value, ast.Dict):
            keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
            if set(keys) & {"install", "develop", "egg_info", "bdist_wheel", "build_py"}:
                return [Finding(ASK, "setup-runs-code", name, node.value.lineno,
                                f"setup.py replaces the {', '.join(map(str, keys))} step(s): code of its own runs "
                                "when the package is built or installed")]
        if isinstance(node, ast.Call):
            parts = dotted(node.func)
            if parts[0] in ("subprocess", "os") and parts[-1] in ("run", "call", "check_call", "check_output",
                                                                   "Popen", "system", "popen"):
                return [Finding(ASK, "setup-runs-code", name, node.lineno,
                                "setup.py runs a program when the package is built")]
            if parts[-1] in ("urlopen", "urlretrieve") or (parts[0].lower() in NET_ROOTS and len(parts) > 1):
                return [Finding(ASK, "setup-runs-code", name, node.lineno,
                                "setup.py uses the network when the package is built")]
    return []
