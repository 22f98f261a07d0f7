"""`hermes profile export` and `import`: a profile as a `.tar.gz` of one folder named after it,
holding what a clone takes (config.yaml, .env, SOUL.md, skills, the memory files) with the secrets
left out: every `.env` value is emptied (the names stay, to say what to fill in) and every config
value that looks like a secret (under a key named like one, or shaped like a known key) is emptied.
Sessions, state, logs and the gateway's files are never in an archive."""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import MutableMapping, MutableSequence
from pathlib import Path
from typing import Any

from .._errors import ProfileError
from .._files import write_atomic
from .._redact import redact_secrets
from .manage import CLONED, building, edit_home, existing
from .names import DEFAULT, check_name

__all__ = ["export", "import_archive", "strip_config", "strip_env"]

_SECRET_KEY = re.compile(r"(?i)(^|[_.-])(key|keys|token|secret|password|passwd|credentials?|api_?key|auth)$")
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")  # `${OPENAI_API_KEY}`: a name, not a secret


def strip_env(text: str) -> str:
    """`.env` text with every value emptied (`NAME=`); comments and names kept."""
    lines = []
    for line in text.splitlines():
        body = line.strip()
        if body and not body.startswith("#") and "=" in body:
            line = body.partition("=")[0].rstrip() + "="
        lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


def _secret(key: Any, value: Any) -> bool:
    if not isinstance(value, str) or not value or _REFERENCE.match(value.strip()):
        return False
    return bool(_SECRET_KEY.search(str(key))) or redact_secrets(value) != value


def strip_config(node: Any) -> None:
    """Empty, in place, every string in a config document that looks like a secret."""
    if isinstance(node, MutableMapping):
        for key in list(node):
            if _secret(key, node[key]):
                node[key] = ""
            else:
                strip_config(node[key])
    elif isinstance(node, MutableSequence):
        for index, item in enumerate(node):
            if isinstance(item, str) and redact_secrets(item) != item:
                node[index] = ""
            else:
                strip_config(item)


def export(root: Path, name: str, out: Path) -> Path:
    """Write profile `name` of `root` to the archive `out` (whole or not at all); `out`."""
    home = existing(root, check_name(name))
    with tempfile.TemporaryDirectory(prefix="hermes-profile-") as staging:
        folder = Path(staging) / name
        folder.mkdir()
        if (home / "config.yaml").is_file():
            shutil.copy2(home / "config.yaml", folder / "config.yaml")
            edit_home(folder, strip_config)
        if (home / ".env").is_file():
            (folder / ".env").write_text(strip_env((home / ".env").read_text(encoding="utf-8")), encoding="utf-8")
        for part in CLONED:
            found = home / part
            if found.is_dir():
                shutil.copytree(found, folder / part, symlinks=True)
            elif found.is_file():
                (folder / part).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(found, folder / part)
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        os.close(fd)
        try:
            with tarfile.open(tmp, "w:gz") as tar:
                tar.add(folder, arcname=name)
            os.chmod(tmp, 0o600)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return out


def _members(tar: tarfile.TarFile, archive: Path) -> tuple[str, list[tarfile.TarInfo]]:
    """The archive's one top folder and its members; refused when it holds anything else (a
    link, a device, a path leaving the folder)."""
    members = tar.getmembers()
    tops = {member.name.split("/")[0] for member in members}
    if len(tops) != 1:
        raise ProfileError(f"{archive} is not a profile archive: it must hold one folder (it holds {len(tops)} entries "
                           "at the top); make one with `hermes profile export`")
    for member in members:
        parts = member.name.split("/")
        if member.name.startswith("/") or ".." in parts or not (member.isfile() or member.isdir()):
            raise ProfileError(f"{archive} holds {member.name!r}, which a profile archive may not (a link, a device "
                               "or a path outside its folder); nothing was imported")
    return tops.pop(), members


def import_archive(root: Path, archive: Path, name: str | None = None) -> tuple[str, Path]:
    """Make a new profile of `root` from `archive` (named `name`, else as in the archive); its
    name and home. Its `.env` holds the names of the secrets to fill in, without values."""
    try:
        tar = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise ProfileError(f"cannot read {archive} as a profile archive ({exc}); make one with "
                           "`hermes profile export`") from None
    with tar:
        top, members = _members(tar, archive)
        if name is None:
            if top == DEFAULT:
                raise ProfileError(f"{archive} holds the default profile; name the new one: "
                                   "hermes profile import ARCHIVE --name NAME")
            name = top
        check_name(name, new=True)
        if (root / "profiles" / name).exists():
            raise ProfileError(f"profile {name!r} already exists; import it under another name: "
                               "hermes profile import ARCHIVE --name NAME")
        with building(root, name) as work:
            for member in members:
                relative = member.name.split("/", 1)[1] if "/" in member.name else ""
                if not relative:
                    continue
                target = work / relative
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    continue
                with source, open(target, "wb") as handle:
                    shutil.copyfileobj(source, handle)
            for part in ("memories", "skills", "logs", "cron"):
                (work / part).mkdir(exist_ok=True)
            env = work / ".env"
            if not env.exists():
                write_atomic(env, "", mode=0o600)
            os.chmod(env, 0o600)
    return name, root / "profiles" / name
