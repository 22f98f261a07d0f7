"""The PostgreSQL side of the floor: one connection pool per database URL and process, each
stage's schema created or upgraded once (under an advisory lock, so hosts starting together do
not race), SQLite-style statements (`?` parameters) translated once, and the driver's errors
as one line that says what to do, with the URL's password masked.

psycopg 3 and psycopg_pool are imported here alone, and only when a `postgresql://` URL is
configured (the `[postgres]` extra).
"""

from __future__ import annotations

import atexit
import functools
import select
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Protocol

from .._errors import StateStoreError, StateUnavailableError
from .url import StateUrl

__all__ = ["Postgres", "PgTx", "close_state_pools", "postgres", "pg_sql"]

SCHEMA_LOCK = 0x4E524D53  # the advisory lock every host takes while it creates or upgrades a schema
CONNECT_TIMEOUT = 5  # seconds a new connection may take
WAIT_TIMEOUT = 5.0  # seconds a request waits for a free (or new) connection before it is "unavailable"
_CONFLICTS = ("40P01", "40001")  # a deadlock, a serialization failure: another host's write, not an outage
_VERSIONS = """CREATE TABLE IF NOT EXISTS hermes_schema (
    stage TEXT PRIMARY KEY, version INTEGER NOT NULL, updated DOUBLE PRECISION NOT NULL)"""


@functools.lru_cache(maxsize=1024)
def pg_sql(sql: str) -> str:
    """A statement written for sqlite3 (`?` parameters) in psycopg's form (`%s`, a literal `%`
    doubled); quoted text and identifiers are left as they are."""
    out: list[str] = []
    quote = ""
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        if char == "%":
            out.append("%%")
            continue
        out.append(char)
    return "".join(out)


class PgTx:
    """One transaction on the shared database, with sqlite3's `execute` and `executemany`.

    A write transaction runs in libpq's pipeline mode: its statements (with the BEGIN before them
    and the COMMIT after) go out without waiting for each answer, and the block waits only where it
    reads one (a row, or how many rows a statement changed): a transaction of writes is one round
    trip instead of one per statement."""

    __slots__ = ("_conn", "_pipeline")
    dialect = "postgresql"

    def __init__(self, conn: Any, pipeline: Any = None) -> None:
        self._conn = conn
        self._pipeline = pipeline

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor = self._conn.execute(pg_sql(sql), tuple(params))
        return cursor if self._pipeline is None else _Piped(cursor, self._pipeline)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        cursor = self._conn.cursor()
        cursor.executemany(pg_sql(sql), [tuple(row) for row in rows])
        return cursor if self._pipeline is None else _Piped(cursor, self._pipeline)


class _Piped:
    """A statement's cursor in a pipelined transaction: its rows wait for the answer by themselves
    (psycopg fetches them); how many rows it changed is waited for here."""

    __slots__ = ("_cursor", "_pipeline")

    def __init__(self, cursor: Any, pipeline: Any) -> None:
        self._cursor, self._pipeline = cursor, pipeline

    @property
    def rowcount(self) -> int:
        self._pipeline.sync()
        return int(self._cursor.rowcount)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class Stage(Protocol):
    """What the floor reads of a stage's store (`Store`'s class attributes)."""

    what: str
    stage: str
    schema_version: int
    pg_schema: str
    pg_upgrades: Mapping[int, str]


def _driver() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise StateStoreError("state.url names a PostgreSQL database, but its driver is not installed: "
                              "pip install 'hermes-core[postgres]'") from None
    return psycopg, psycopg_pool


def describe(url: StateUrl, exc: BaseException) -> StateStoreError:
    """The driver's error as one line that says what to do (the password masked)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    low = text.lower()
    where = f"the shared database {url.masked}"
    if "password authentication failed" in low or "no password supplied" in low:
        return StateStoreError(f"{where} refused user {url.user!r}: wrong password (fix state.url or "
                               "HERMES_STATE_URL)")
    if "does not exist" in low and "database" in low:
        return StateStoreError(f"{where} does not exist on {url.host}:{url.port}: create it "
                               f"(createdb -h {url.host} -p {url.port} {url.database}) or fix state.url")
    if "role" in low and "does not exist" in low:
        return StateStoreError(f"{where} has no user {url.user!r}: create the role or fix state.url")
    return StateUnavailableError(url.scrub(f"{where} cannot be reached ({text}); check that it runs and "
                                           "that state.url is right"))


class Postgres:
    """One database URL in this process: its pool and the stages whose schema is ready."""

    def __init__(self, url: StateUrl, *, pool_size: int = 8) -> None:
        self.url = url
        self.pool_size = pool_size
        self._pool: Any = None
        self._ready: set[str] = set()
        self._lock = threading.Lock()
        self._down = False  # the last transaction found the database unreachable

    # -- connections -----------------------------------------------------------------------------

    def _open_pool(self) -> Any:
        with self._lock:
            if self._pool is not None:
                return self._pool
            psycopg, psycopg_pool = _driver()
            # A first connection made directly: its failure names the reason (a wrong password, no
            # such database), where the pool would only time out.
            try:
                psycopg.connect(self.url.url, connect_timeout=CONNECT_TIMEOUT).close()
            except psycopg.Error as exc:
                raise describe(self.url, exc) from None
            import logging

            logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)  # a failure reaches the caller in words
            self._pool = psycopg_pool.ConnectionPool(
                self.url.url, min_size=1, max_size=max(1, self.pool_size), open=True, timeout=WAIT_TIMEOUT,
                check=_checked,
                kwargs={"connect_timeout": CONNECT_TIMEOUT, "application_name": "hermes-core"},
                name=f"hermes-{self.url.database}")
            return self._pool

    def close(self, timeout: float = 1.0) -> None:
        """Close the pool, waiting up to `timeout` seconds for its workers (a connection being made)."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._ready.clear()
        if pool is not None:
            pool.close(timeout=timeout)

    def ping(self) -> float:
        """Seconds one round trip takes; a `StateStoreError` when the database cannot be reached."""
        started = time.perf_counter()
        with self.transaction(None) as tx:
            tx.execute("SELECT 1").fetchone()
        return time.perf_counter() - started

    @contextmanager
    def transaction(self, store: Stage | None, *, read_only: bool = False) -> Iterator[PgTx]:
        """One transaction (committed when the block ends, rolled back on an exception), with
        `store`'s schema made ready first. With `read_only`, the block's statements run one by one
        (no BEGIN and COMMIT: two round trips less); under READ COMMITTED each statement of a
        transaction sees its own snapshot anyway, so reads see nothing different."""
        psycopg, psycopg_pool = _driver()
        if self._down:
            self._recover(psycopg)
        pool = self._open_pool()
        if store is not None and store.stage not in self._ready:
            self._prepare(pool, store)
        try:
            with pool.connection() as conn:
                # Autocommit while lent: a read's statements go alone (no BEGIN, no COMMIT); a write
                # sends its own BEGIN and COMMIT in libpq's pipeline with the block's statements, all
                # out with the Sync the pipeline ends with.
                conn.autocommit = True
                try:
                    if read_only:
                        yield PgTx(conn)
                    else:
                        with conn.pipeline() as pipeline:
                            conn.execute("BEGIN")
                            yield PgTx(conn, pipeline)
                            conn.execute("COMMIT")
                except BaseException:
                    with suppress(psycopg.Error):
                        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                            conn.execute("ROLLBACK")
                    raise
                finally:
                    with suppress(psycopg.Error):  # a broken connection is dropped by the pool
                        conn.autocommit = False
        except psycopg_pool.PoolTimeout:
            raise self._unavailable(psycopg) from None
        except psycopg.Error as exc:
            if getattr(exc, "sqlstate", None) in _CONFLICTS:  # the server answered: it is not down
                raise StateUnavailableError(
                    f"a write to the shared database {self.url.masked}"
                    f"{f' (the {store.what})' if store is not None else ''} met another host's at once and was "
                    f"rolled back ({' '.join(str(exc).split())}); try again") from None
            if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
                raise self._gone(describe(self.url, exc)) from None
            raise StateStoreError(self.url.scrub(
                f"the shared database {self.url.masked} refused a statement"
                f"{f' of the {store.what}' if store is not None else ''}: {' '.join(str(exc).split())}")) from None

    def _unavailable(self, psycopg: Any) -> StateStoreError:
        try:
            psycopg.connect(self.url.url, connect_timeout=CONNECT_TIMEOUT).close()
        except psycopg.Error as exc:
            return self._gone(describe(self.url, exc))
        return StateUnavailableError(f"the shared database {self.url.masked} had no free connection for "
                                     f"{WAIT_TIMEOUT:g} s (state.pool_size is {self.pool_size}); try again")

    def _gone(self, error: StateStoreError) -> StateStoreError:
        if isinstance(error, StateUnavailableError):
            self._down = True
        return error

    def _recover(self, psycopg: Any) -> None:
        """The database was found unreachable: a direct connection says at once whether it still is
        (no request waits on the pool meanwhile), and once it answers the pool is opened anew (its
        connections died with the server, and it would reconnect them on its own growing back-off)."""
        try:
            psycopg.connect(self.url.url, connect_timeout=CONNECT_TIMEOUT).close()
        except psycopg.Error as exc:
            raise describe(self.url, exc) from None
        with self._lock:
            if not self._down:
                return
            self._down = False
            pool, self._pool = self._pool, None
        if pool is not None:  # connections still lent out are closed when they come back
            threading.Thread(target=pool.close, kwargs={"timeout": 1.0}, name="hermes-pool-close", daemon=True).start()

    # -- schemas ---------------------------------------------------------------------------------

    def versions(self) -> dict[str, int]:
        """Each stage's schema version in the database (empty before any stage was used)."""
        with self.transaction(None) as tx:
            if tx.execute("SELECT to_regclass('hermes_schema')").fetchone()[0] is None:
                return {}
            return {str(stage): int(version) for stage, version in tx.execute("SELECT stage, version FROM hermes_schema")}

    def prepare(self, store: Stage) -> None:
        """Make `store`'s tables ready (a stage's class will do: only its attributes are read)."""
        if store.stage not in self._ready:
            self._prepare(self._open_pool(), store)

    def _prepare(self, pool: Any, store: Stage) -> None:
        """Create or upgrade `store`'s tables to its `schema_version`, once per process; two hosts
        doing it at once wait for each other (an advisory lock), and a database whose schema is
        newer than this hermes-core knows is refused, never downgraded."""
        psycopg, _ = _driver()
        stage, wanted = store.stage, store.schema_version
        try:
            with pool.connection() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                conn.execute(_VERSIONS)
                row = conn.execute("SELECT version FROM hermes_schema WHERE stage = %s", (stage,)).fetchone()
                version = int(row[0]) if row else 0
                if version > wanted:
                    raise StateStoreError(
                        f"the shared database {self.url.masked} holds the {store.what} at schema {version}, newer "
                        f"than this hermes-core knows ({wanted}); upgrade hermes-core on this host (a schema is "
                        "never downgraded)")
                if version < wanted:
                    steps = [store.pg_schema] if version == 0 else [store.pg_upgrades[v] for v in range(version + 1, wanted + 1)]
                    for step in steps:
                        conn.execute(step)
                    conn.execute("INSERT INTO hermes_schema (stage, version, updated) VALUES (%s, %s, %s) "
                                 "ON CONFLICT (stage) DO UPDATE SET version = excluded.version, updated = excluded.updated",
                                 (stage, wanted, time.time()))
        except psycopg.Error as exc:
            if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
                raise describe(self.url, exc) from None
            raise StateStoreError(self.url.scrub(f"creating the {store.what}'s tables in {self.url.masked} failed: "
                                                 f"{' '.join(str(exc).split())}")) from None
        self._ready.add(stage)


def _checked(conn: Any) -> None:
    """The pool's check of a connection it lends out, without a round trip while the connection is
    quiet: one the server closed (a restart, a crash: its socket reads the end, or the server's last
    error) or that has anything else to read is asked (`check_connection`), and dropped when it fails."""
    try:
        quiet = not conn.closed and not select.select([conn.pgconn.socket], [], [], 0)[0]
    except Exception:  # noqa: BLE001 - no socket, or one select cannot watch: ask the server
        quiet = False
    if not quiet:
        import psycopg_pool

        psycopg_pool.ConnectionPool.check_connection(conn)


_DATABASES: dict[StateUrl, Postgres] = {}
_DATABASES_LOCK = threading.Lock()


def postgres(url: StateUrl, *, pool_size: int = 8) -> Postgres:
    """The process's `Postgres` for `url` (one pool per URL, closed at exit)."""
    with _DATABASES_LOCK:
        found = _DATABASES.get(url)
        if found is None:
            if not _DATABASES:
                atexit.register(_close_all)
            found = _DATABASES[url] = Postgres(url, pool_size=pool_size)
        return found


def close_state_pools(where: Callable[[StateUrl], bool] = lambda url: True, *, timeout: float = 1.0) -> int:
    """Close this process's pools on the databases `where` picks (every one by default), each
    waiting up to `timeout` seconds for its workers; how many were closed. A store used again
    afterwards opens a new pool. Before a database is dropped, say, so that no pool goes on
    connecting to it in the background.

    >>> close_state_pools(lambda url: url.database == "scratch", timeout=30)
    0
    """
    with _DATABASES_LOCK:
        picked = [url for url in _DATABASES if where(url)]
        databases = [_DATABASES.pop(url) for url in picked]
    for database in databases:
        database.close(timeout=timeout)
    return len(databases)


def _close_all() -> None:
    with _DATABASES_LOCK:
        databases = list(_DATABASES.values())
        _DATABASES.clear()
    for database in databases:
        try:
            database.close()
        except Exception:  # noqa: BLE001 - at exit, a pool that cannot close is no one's problem
            pass
