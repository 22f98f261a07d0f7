"""`ctx.state`: a plugin's durable JSON key-value store, one SQLite file per plugin."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .._errors import MemoryStoreError, PluginStateError
from .._messages import storable_json, utf8_encodable
from .._sqlite import SqliteFile

__all__ = ["PluginState", "STATE_QUOTA_BYTES"]


STATE_QUOTA_BYTES = 10 * 1024 * 1024

_Row = tuple[str, int, str]  # key, size, value as JSON text


class _StateFile(SqliteFile):
    """One plugin's keys and JSON values. `totals.bytes` is the size of the whole state as one
    JSON object, kept by triggers in the transaction that changes a row, so that no write reads
    the other values; `totals.imported` names the `state.json` imported into it, if any."""

    schema_version = 1
    synchronous = "NORMAL"
    schema = """
        CREATE TABLE entries (key TEXT NOT NULL PRIMARY KEY, size INTEGER NOT NULL, value TEXT NOT NULL);
        CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), bytes INTEGER NOT NULL, imported TEXT);
        INSERT INTO totals (id, bytes) VALUES (1, 0);
        CREATE TRIGGER entries_added AFTER INSERT ON entries BEGIN
            UPDATE totals SET bytes = bytes + new.size; END;
        CREATE TRIGGER entries_changed AFTER UPDATE OF size ON entries BEGIN
            UPDATE totals SET bytes = bytes - old.size + new.size; END;
        CREATE TRIGGER entries_removed AFTER DELETE ON entries BEGIN
            UPDATE totals SET bytes = bytes - old.size; END;
    """
    _UPSERT = ("INSERT INTO entries (key, size, value) VALUES (?, ?, ?) "
               "ON CONFLICT (key) DO UPDATE SET size = excluded.size, value = excluded.value")

    def __init__(self, path: Path, plugin_id: str) -> None:
        super().__init__(path)
        self.plugin_id = plugin_id
        self.what = f"state database of plugin {plugin_id!r}"

    def value(self, key: str) -> str | None:
        with self._reading() as db:
            row = None if db is None else db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
            return None if row is None else str(row[0])

    def rows(self) -> list[tuple[str, str]]:
        with self._reading() as db:
            return [] if db is None else db.execute("SELECT key, value FROM entries ORDER BY rowid").fetchall()

    def count(self) -> int:
        with self._reading() as db:
            return 0 if db is None else int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def put(self, rows: list[_Row]) -> None:
        """Write `rows` in one transaction, or nothing when the state would then pass the quota."""
        with self._writing() as db:
            db.executemany(self._UPSERT, rows)
            (total,) = db.execute("SELECT bytes FROM totals").fetchone()
            if total > STATE_QUOTA_BYTES:
                raise _over_quota(self.plugin_id)

    def remove(self, key: str | None) -> bool:
        """Remove `key` (every key when None); whether anything was removed."""
        if not self.path.exists():
            return False
        with self._writing() as db:
            if key is None:
                return db.execute("DELETE FROM entries").rowcount > 0
            return db.execute("DELETE FROM entries WHERE key = ?", (key,)).rowcount > 0

    def import_once(self, rows: list[_Row], source: str) -> bool:
        """Import `rows` from `source` unless a file was imported before (checked and written in
        one transaction, so that processes migrating at once import it once); whether it did."""
        with self._writing() as db:
            if db.execute("SELECT imported FROM totals").fetchone()[0] is not None:
                return False
            db.executemany(self._UPSERT, rows)
            db.execute("UPDATE totals SET imported = ?", (source,))
            return True


class PluginState:
    """A plugin's durable key-value store: JSON values, at most 10 MB in all, kept in the SQLite
    file `$HERMES_HOME/plugin-data/<plugin id>/state.db` (WAL), each change its own transaction.
    A change that returned survives the process being killed; processes sharing the state see
    each other's changes. Works like a dict: `state["k"] = v`, `state.get("k", d)`,
    `del state["k"]`, `"k" in state`, `state.keys()`, plus `set`, `delete`, `update`, `clear`.

    The constructor's `path` names the `state.json` earlier versions kept the whole state in
    (the database is `state.db` beside it, the attribute `path`): on first use that file is
    imported, in one transaction, and renamed `state.json.migrated`."""

    def __init__(self, path: Path, plugin_id: str) -> None:
        self._legacy = Path(path)
        self.path = self._legacy.with_name("state.db")
        self._plugin_id = plugin_id
        self._file = _StateFile(self.path, plugin_id)
        self._lock = threading.Lock()
        self._migrated = False

    def __repr__(self) -> str:
        return f"<PluginState of {self._plugin_id!r} at {self.path}>"

    @contextlib.contextmanager
    def _store(self, writing: bool = False) -> Iterator[_StateFile]:
        """The database, once `state.json` is migrated; its errors as `PluginStateError`s."""
        try:
            if not self._migrated:
                self._migrate()
            yield self._file
        except MemoryStoreError as exc:
            raise PluginStateError(f"{exc}; the stored state is unchanged" if writing else str(exc)) from None

    def _migrate(self) -> None:
        """Import `state.json`, if there is one and the database imported none before, then rename
        it (after the commit: a process killed in between leaves a file the next use renames)."""
        with self._lock:
            if self._migrated:
                return
            try:
                text = self._legacy.read_bytes()
            except FileNotFoundError:
                self._migrated = True
                return
            except OSError as exc:
                raise PluginStateError(
                    f"cannot read the state of plugin {self._plugin_id!r} ({self._legacy}) to import it: {exc}"
                ) from None
            try:
                data = json.loads(text)  # from bytes: a BOM is read past
            except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested past the parser
                raise PluginStateError(
                    f"the state of plugin {self._plugin_id!r} ({self._legacy}) is not JSON ({exc}); "
                    "fix or remove the file") from None
            try:
                rows = [_row(key, value) for key, value in data.items()] if isinstance(data, dict) else []
                self._file.import_once(rows, self._legacy.name)
            except UnicodeEncodeError as exc:
                raise PluginStateError(
                    f"the state of plugin {self._plugin_id!r} ({self._legacy}) holds text that cannot be "
                    f"stored ({exc}); fix or remove the file") from None
            with contextlib.suppress(OSError):  # gone: another process migrating at once renamed it
                os.replace(self._legacy, self._legacy.with_name(self._legacy.name + ".migrated"))
            self._migrated = True

    def _rows(self, values: Mapping[str, Any]) -> list[_Row]:
        rows = []
        for key, value in values.items():
            self._check_key(key)
            try:
                rows.append(_row(key, value))
            except (TypeError, ValueError) as exc:
                raise PluginStateError(
                    f"ctx.state of plugin {self._plugin_id!r} takes JSON values only: {exc}") from None
        return rows

    def _check_key(self, key: object) -> None:
        if not isinstance(key, str) or not key or not utf8_encodable(key):
            raise PluginStateError(
                f"ctx.state of plugin {self._plugin_id!r} takes non-empty text keys, not {key!r}")

    def get(self, key: str, default: Any = None) -> Any:
        if not isinstance(key, str):
            return default
        with self._store() as file:
            text = file.value(key)
        return default if text is None else json.loads(text)

    def set(self, key: str, value: Any) -> None:
        self.update({key: value})

    def delete(self, key: str) -> bool:
        """Remove `key`; whether it was there."""
        if not isinstance(key, str):
            return False
        with self._store(writing=True) as file:
            return file.remove(key)

    def update(self, values: Mapping[str, Any]) -> None:
        """Set every key of `values`, all in one transaction or none."""
        rows = self._rows(values)
        if sum(size for _, size, _ in rows) > STATE_QUOTA_BYTES:  # refused without writing it first
            raise _over_quota(self._plugin_id)
        with self._store(writing=True) as file:
            file.put(rows)

    def clear(self) -> None:
        with self._store(writing=True) as file:
            file.remove(None)

    def keys(self) -> list[str]:
        with self._store() as file:
            return [key for key, _ in file.rows()]

    def items(self) -> list[tuple[str, Any]]:
        with self._store() as file:
            return [(key, json.loads(text)) for key, text in file.rows()]

    def __getitem__(self, key: str) -> Any:
        text = None
        if isinstance(key, str):
            with self._store() as file:
                text = file.value(key)
        if text is None:
            raise KeyError(key)
        return json.loads(text)

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: str) -> None:
        if not self.delete(key):
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        with self._store() as file:
            return file.value(key) is not None

    def __len__(self) -> int:
        with self._store() as file:
            return file.count()


def _row(key: str, value: Any) -> _Row:
    """`key` and `value` as stored: `size` is what the pair adds to the state as one JSON object
    (`"key": value, `), the measure of the quota."""
    text = storable_json(value, sort_keys=True)
    size = len(text.encode("utf-8"))
    return key, size + len(json.dumps(key, ensure_ascii=False).encode("utf-8")) + 4, text


def _over_quota(plugin_id: str) -> PluginStateError:
    return PluginStateError(
        f"ctx.state of plugin {plugin_id!r} would exceed its {STATE_QUOTA_BYTES // 2**20} MB quota; "
        "keep large data in files under the plugin's own folder")



