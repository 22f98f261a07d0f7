"""Each ACP session's folder (the `cwd` the editor opened it in), which `session/list` shows and
filters by: `$HERMES_HOME/acp/sessions.json` (`{session id: cwd}`), or with `state.url` the shared
database (stage `acp`, table `acp_folders`), so a session resumed through another host finds its
folder there (the home's sessions.json, when it has one, is added on first use and left as it was).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermes_core.hosting import StateUrl, Store, pg_schema_of, read_json, state_url, write_json

__all__ = ["AcpStore", "Folders", "FoldersFile", "FoldersShared", "folders_for"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS acp_folders (
    session_id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    at REAL NOT NULL
);
"""


class AcpStore(Store):
    """The ACP stage's table (`acp/state.db` without a URL: only the contract tests use that)."""

    what = "ACP session folders"
    stage = "acp"
    schema = _SCHEMA
    pg_schema = pg_schema_of(_SCHEMA)
    schema_version = 1

    @classmethod
    def import_home(cls, home: Path, url: StateUrl) -> str | None:
        """`hermes state migrate`: the home's acp/sessions.json imported."""
        source = Path(home) / "acp" / "sessions.json"
        if not source.exists():
            return None
        FoldersShared(cls(Path(home) / "acp" / "state.db", url=url), source)
        return "acp/sessions.json imported"


class Folders:
    """Session id -> the folder it was opened in."""

    def of(self, session_ids: Iterable[str]) -> dict[str, str]:
        """The folders of those of `session_ids` that have one."""
        raise NotImplementedError

    def remember(self, session_id: str, cwd: str) -> None:
        raise NotImplementedError


class FoldersFile(Folders):
    """`acp/sessions.json`, as it always was."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _all(self) -> dict[str, str]:
        try:
            known = read_json(self.path) if self.path.exists() else {}
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in known.items()} if isinstance(known, dict) else {}

    def of(self, session_ids: Iterable[str]) -> dict[str, str]:
        known = self._all()
        return {sid: known[sid] for sid in session_ids if sid in known}

    def remember(self, session_id: str, cwd: str) -> None:
        known = self._all()
        if known.get(session_id) != cwd:
            write_json(self.path, {**known, session_id: cwd}, durable=False)


class FoldersShared(Folders):
    """The folders in the shared database."""

    def __init__(self, store: AcpStore, imported: Path | None = None) -> None:
        self.store = store
        if imported is not None and imported.exists():
            known = FoldersFile(imported)._all()
            with self.store._writing() as db:
                db.executemany("INSERT INTO acp_folders (session_id, cwd, at) VALUES (?, ?, ?) "
                               "ON CONFLICT (session_id) DO NOTHING", [(k, v, 0.0) for k, v in known.items()])

    def of(self, session_ids: Iterable[str]) -> dict[str, str]:
        wanted = sorted(set(session_ids))
        if not wanted:
            return {}
        with self.store._reading() as db:
            rows = db.execute(f"SELECT session_id, cwd FROM acp_folders WHERE session_id IN "
                              f"({', '.join('?' * len(wanted))})", wanted).fetchall() if db else []
        return {str(sid): str(cwd) for sid, cwd in rows}

    def remember(self, session_id: str, cwd: str) -> None:
        with self.store._writing() as db:
            db.execute("INSERT INTO acp_folders (session_id, cwd, at) VALUES (?, ?, ?) ON CONFLICT (session_id) "
                       "DO UPDATE SET cwd = excluded.cwd, at = excluded.at", (session_id, cwd, time.time()))


def folders_for(home: Path, url: StateUrl | str | None | Any = "auto") -> Folders:
    """The session folders of `home`: in the database `state.url` names, else its acp/sessions.json."""
    url = state_url(home) if url == "auto" else url
    if url is None:
        return FoldersFile(Path(home) / "acp" / "sessions.json")
    return FoldersShared(AcpStore(Path(home) / "acp" / "state.db", url=url), Path(home) / "acp" / "sessions.json")
