"""`ctx.state`: a plugin's durable JSON key-value store, one SQLite file per plugin, or one table
for every plugin in the shared database `state.url` names."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError, MemoryStoreError, PluginStateError
from .._messages import storable_json, utf8_encodable
from .._store import StateUrl, Store, state_url
from .._store.migrate import Copy

__all__ = ["PluginState", "STATE_QUOTA_BYTES", "state_url_of"]


STATE_QUOTA_BYTES = 10 * 1024 * 1024

_Row = tuple[str, int, str]  # key, size, value as JSON text


class _StateFile(Store):
    """One plugin's keys and JSON values: its own SQLite file, or its rows of the shared database's
    `plugin_state` table (keyed by plugin id). `bytes` (SQLite: `totals`, PostgreSQL:
    `plugin_state_totals`) is the size of the whole state as one JSON object, kept by triggers in
    the transaction that changes a row, so that no write reads the other values; `imported`
    names the `state.json` imported into it, if any. On PostgreSQL every write first locks the
    plugin's totals row: the writers of one plugin take turns, and the quota holds across hosts."""

    stage = "plugin_state"
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
    pg_schema = """
        CREATE TABLE IF NOT EXISTS plugin_state (
            id BIGSERIAL NOT NULL,
            plugin_id TEXT NOT NULL,
            key TEXT NOT NULL,
            size INTEGER NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (plugin_id, key)
        );
        CREATE TABLE IF NOT EXISTS plugin_state_totals (
            plugin_id TEXT PRIMARY KEY, bytes BIGINT NOT NULL DEFAULT 0, imported TEXT);
        CREATE OR REPLACE FUNCTION plugin_state_total() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') THEN
                UPDATE plugin_state_totals SET bytes = bytes - OLD.size WHERE plugin_id = OLD.plugin_id;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                UPDATE plugin_state_totals SET bytes = bytes + NEW.size WHERE plugin_id = NEW.plugin_id;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER plugin_state_total AFTER INSERT OR DELETE OR UPDATE OF size ON plugin_state
            FOR EACH ROW EXECUTE FUNCTION plugin_state_total();
    """
    # The same statements for each backend; on PostgreSQL the plugin's id comes first in every one.
    _SQL = {
        "sqlite": {
            "lock": "",
            "value": "SELECT value FROM entries WHERE key = ?",
            "rows": "SELECT key, value FROM entries ORDER BY rowid",
            "count": "SELECT COUNT(*) FROM entries",
            "upsert": "INSERT INTO entries (key, size, value) VALUES (?, ?, ?) "
                      "ON CONFLICT (key) DO UPDATE SET size = excluded.size, value = excluded.value",
            "total": "SELECT bytes FROM totals",
            "remove": "DELETE FROM entries WHERE key = ?",
            "clear": "DELETE FROM entries",
            "claim": "UPDATE totals SET imported = ? WHERE imported IS NULL",
        },
        "postgresql": {
            "lock": "INSERT INTO plugin_state_totals (plugin_id, bytes) VALUES (?, 0) "
                    "ON CONFLICT (plugin_id) DO UPDATE SET bytes = plugin_state_totals.bytes",
            "value": "SELECT value FROM plugin_state WHERE plugin_id = ? AND key = ?",
            "rows": "SELECT key, value FROM plugin_state WHERE plugin_id = ? ORDER BY id",
            "count": "SELECT COUNT(*) FROM plugin_state WHERE plugin_id = ?",
            "upsert": "INSERT INTO plugin_state (plugin_id, key, size, value) VALUES (?, ?, ?, ?) "
                      "ON CONFLICT (plugin_id, key) DO UPDATE SET size = excluded.size, value = excluded.value",
            "total": "SELECT bytes FROM plugin_state_totals WHERE plugin_id = ?",
            "remove": "DELETE FROM plugin_state WHERE plugin_id = ? AND key = ?",
            "clear": "DELETE FROM plugin_state WHERE plugin_id = ?",
            "claim": "UPDATE plugin_state_totals SET imported = ? WHERE plugin_id = ? AND imported IS NULL",
        },
    }

    @classmethod
    def copies(cls, home: Path) -> list[Copy]:
        """For `hermes state migrate`: each plugin's `plugin-data/<id>/state.db` into its rows of
        `plugin_state` (the totals row made first; the triggers count what is copied)."""
        return [Copy(path, "entries", target="plugin_state", constants={"plugin_id": path.parent.name},
                     before="INSERT INTO plugin_state_totals (plugin_id, bytes) VALUES (?, 0) "
                            "ON CONFLICT (plugin_id) DO NOTHING")
                for path in sorted((Path(home) / "plugin-data").glob("*/state.db"))]

    def __init__(self, path: Path, plugin_id: str, *, url: StateUrl | str | None = None) -> None:
        super().__init__(path, url=url)
        self.plugin_id = plugin_id
        self.what = f"state database of plugin {plugin_id!r}"
        self._sql = self._SQL[self.dialect]
        self._mine: tuple[str, ...] = () if self.dialect == "sqlite" else (plugin_id,)

    def _lock_totals(self, db: Any) -> None:
        if self._sql["lock"]:
            db.execute(self._sql["lock"], self._mine)

    def value(self, key: str) -> str | None:
        with self._reading() as db:
            row = None if db is None else db.execute(self._sql["value"], (*self._mine, key)).fetchone()
            return None if row is None else str(row[0])

    def rows(self) -> list[tuple[str, str]]:
        with self._reading() as db:
            return [] if db is None else [(str(k), str(v)) for k, v in db.execute(self._sql["rows"], self._mine)]

    def count(self) -> int:
        with self._reading() as db:
            return 0 if db is None else int(db.execute(self._sql["count"], self._mine).fetchone()[0])

    def put(self, rows: list[_Row]) -> None:
        """Write `rows` in one transaction, or nothing when the state would then pass the quota."""
        with self._writing() as db:
            self._lock_totals(db)
            db.executemany(self._sql["upsert"], [(*self._mine, *row) for row in rows])
            (total,) = db.execute(self._sql["total"], self._mine).fetchone()
            if total > STATE_QUOTA_BYTES:
                raise _over_quota(self.plugin_id)

    def remove(self, key: str | None) -> bool:
        """Remove `key` (every key when None); whether anything was removed."""
        if not self.exists():
            return False
        with self._writing() as db:
            self._lock_totals(db)
            if key is None:
                return int(db.execute(self._sql["clear"], self._mine).rowcount) > 0
            return int(db.execute(self._sql["remove"], (*self._mine, key)).rowcount) > 0

    def import_once(self, rows: list[_Row], source: str) -> bool:
        """Import `rows` from `source` unless a file was imported before (checked and written in
        one transaction, so that processes migrating at once import it once); whether it did."""
        with self._writing() as db:
            self._lock_totals(db)
            if db.execute(self._sql["claim"], (source, *self._mine)).rowcount == 0:
                return False
            db.executemany(self._sql["upsert"], [(*self._mine, *row) for row in rows])
            return True


class PluginState:
    """A plugin's durable key-value store: JSON values, at most 10 MB in all, kept in the SQLite
    file `$HERMES_HOME/plugin-data/<plugin id>/state.db` (WAL), each change its own transaction.
    A change that returned survives the process being killed; processes sharing the state see
    each other's changes. Works like a dict: `state["k"] = v`, `state.get("k", d)`,
    `del state["k"]`, `"k" in state`, `state.keys()`, plus `set`, `delete`, `update`, `clear`.

    The constructor's `path` names the `state.json` earlier versions kept the whole state in
    (the database is `state.db` beside it, the attribute `path`): on first use that file is
    imported, in one transaction, and renamed `state.json.migrated`.

    With `url` (the home's `state.url`), the state is the plugin's rows of the shared database's
    `plugin_state` table instead, the same for every host that names it; the quota holds across
    them, and a `state.json` is imported once per plugin (the first host's; the file is renamed
    on every host)."""

    def __init__(self, path: Path, plugin_id: str, *, url: StateUrl | str | None = None) -> None:
        self._legacy = Path(path)
        self.path = self._legacy.with_name("state.db")
        self._plugin_id = plugin_id
        self._file = _StateFile(self.path, plugin_id, url=url)
        self._lock = threading.Lock()
        self._migrated = False

    def __repr__(self) -> str:
        return f"<PluginState of {self._plugin_id!r} at {self._file.location}>"

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
        if "\x00" in key and self._file.dialect == "postgresql":
            raise PluginStateError(
                f"ctx.state of plugin {self._plugin_id!r} is kept in PostgreSQL (state.url), whose text holds no "
                f"NUL character: use another key than {key!r}")

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


def state_url_of(home: Path, plugin_id: str) -> StateUrl | None:
    """The shared database `home` keeps `ctx.state` in (None: SQLite under the home); a malformed
    `state.url` is the `PluginStateError` of the plugin that asked."""
    try:
        return state_url(home)
    except ConfigError as exc:
        raise PluginStateError(f"ctx.state of plugin {plugin_id!r} cannot be opened: {exc}") from None
