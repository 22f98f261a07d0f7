"""Writing real wheels (and a sdist) for the trust tests: a zip with the package's files and a
dist-info (METADATA, WHEEL, entry_points.txt, RECORD with each file's sha256), as the wheel
specification lays it out and as pip installs it."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import textwrap
import zipfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_wheel", "write_sdist"]


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(folder: Path, name: str, files: Mapping[str, str], *, version: str = "1.0",
                entry_points: Mapping[str, str] | None = None, requires: tuple[str, ...] = ()) -> Path:
    """The wheel `<name>-<version>-py3-none-any.whl` in `folder`: `files` (path → source, dedented),
    entry points in `hermes_agent.plugins` (default: one plugin, the name's first package)."""
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    if entry_points is None:
        package = next(iter(files)).split("/")[0].removesuffix(".py")
        entry_points = {name.removeprefix("hermes-").removesuffix("-plugin"): package}
    contents: dict[str, bytes] = {path: textwrap.dedent(text).encode() for path, text in files.items()}
    contents[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {name}\n"
                                    + "".join(f"Requires-Dist: {r}\n" for r in requires)).encode()
    contents[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: hermes-core-tests\nRoot-Is-Purelib: true\n"
                                 b"Tag: py3-none-any\n")
    contents[f"{info}/entry_points.txt"] = ("[hermes_agent.plugins]\n" + "".join(
        f"{k} = {v}\n" for k, v in entry_points.items())).encode()
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in contents.items())
    contents[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in contents.items():
            archive.writestr(zipfile.ZipInfo(member, (2024, 1, 1, 0, 0, 0)), data)
    return path


def write_sdist(folder: Path, name: str, files: Mapping[str, str], *, version: str = "1.0") -> Path:
    """A sdist `<name>-<version>.tar.gz` of a setuptools project (setup.py given in `files`, or a plain one)."""
    stem = f"{name.replace('-', '_')}-{version}"
    package = next(p for p in files if p != "setup.py").split("/")[0]
    contents = {"setup.py": (
        "from setuptools import setup\n"
        f"setup(name={name!r}, version={version!r}, packages=[{package!r}],\n"
        f"      entry_points={{'hermes_agent.plugins': ['{name.removeprefix('hermes-')} = {package}']}})\n"),
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", **files}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member, text in contents.items():
            data = textwrap.dedent(text).encode()
            info = tarfile.TarInfo(f"{stem}/{member}")
            info.size, info.mtime = len(data), 1704067200
            archive.addfile(info, io.BytesIO(data))
    return path
