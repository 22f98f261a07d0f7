"""Agent sessions: every message as it is written, tool calls, token usage, compression events
(what was replaced by what) and the system prompt each conversation was started with (sent again
when it is resumed), with full-text search over the messages. Append-only.

Where: in SQLite under `$HERMES_HOME/sessions.db` (FTS5), or, when `state.url` (or
`HERMES_STATE_URL`) names a PostgreSQL database, in that database's tables, shared by every host
that names it (PostgreSQL's own text search: a `tsvector` column the database keeps, with a GIN
index). Search reads a query the same way on both: every whitespace-separated chunk is a phrase,
and a message matches any of them; words are folded to their stems (Porter's for FTS5,
Snowball's English for PostgreSQL: the two agree on all but a few words, such as "dies" and
"dying"), case and accents ignored, no stop words.

Durability: each write is committed at once, or, inside `store.step()`, with the rest of its
step of the agent's loop. The file is in WAL mode with `synchronous=NORMAL`: a commit costs
no fsync and survives a crash of the process (the WAL is in the operating system's hands),
so a killed or crashed agent loses at most the step it was in. A power loss or an operating
system crash can also roll back the latest commits the operating system had not yet written
to disk (on Linux, typically up to the last ~30 seconds; SQLite syncs the WAL only when it
checkpoints it into the database); the file stays consistent and what came before is whole.
On PostgreSQL a commit is as durable as the database's settings make it."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hermes_core import Message, Messages, fts_phrases, message_text, storable_json, storable_text
from hermes_core.hosting import StateUrl, Store

from .store_pg import PG_SCHEMA, PG_UPGRADES, RANKED, pg_chunks, pg_count, pg_search

__all__ = ["SessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    text, content='messages', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TABLE IF NOT EXISTS tool_calls (
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
    session_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost REAL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS origins (
    session_id TEXT PRIMARY KEY,
    platform TEXT NOT NULL DEFAULT '',
    user TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS origins_user ON origins(user);
CREATE INDEX IF NOT EXISTS tool_calls_session ON tool_calls(session_id);
CREATE INDEX IF NOT EXISTS usage_session ON usage(session_id);
CREATE INDEX IF NOT EXISTS usage_created ON usage(created);
CREATE TABLE IF NOT EXISTS compressions (
    session_id TEXT NOT NULL,
    at_seq INTEGER NOT NULL,
    engine TEXT NOT NULL,
    replaced TEXT NOT NULL,
    window TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS compressions_session ON compressions(session_id);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated DESC, created DESC, id);
CREATE TRIGGER IF NOT EXISTS messages_touch AFTER INSERT ON messages BEGIN
    UPDATE sessions SET updated = new.created WHERE id = new.session_id AND updated < new.created;
END;
CREATE TABLE IF NOT EXISTS session_prompts (
    session_id TEXT PRIMARY KEY,
    prompt TEXT NOT NULL,
    created REAL NOT NULL
);
"""
# Schema 4: `sessions.updated` is when a session was last written to (its last message, kept by the
# trigger `messages_touch`; before, the time it started, the last message read at each listing), so
# the latest sessions are read along an index instead of probing and sorting every session.
_TOUCH_ALL = ("UPDATE sessions SET updated = (SELECT max(m.created) FROM messages m WHERE m.session_id = sessions.id) "
              "WHERE updated < (SELECT max(m.created) FROM messages m WHERE m.session_id = sessions.id);")

_INSERT_MESSAGE = ("INSERT INTO messages(session_id, seq, role, body, text, created) VALUES (?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (session_id, seq) DO NOTHING")
_NEXT_SEQ = "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?"


def _prompt(text: str | None) -> dict[str, Any] | None:
    """A kept prompt as stored (None: none, or a text that is no JSON object: assembled again)."""
    try:
        found = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


class SessionStore(Store):
    """Every session of one `$HERMES_HOME`, or of every home that names the same `state.url`.

    >>> store = SessionStore(home, url=state_url(home))
    """

    what = "session store"
    stage = "sessions"
    schema = _SCHEMA
    pg_schema = PG_SCHEMA
    schema_version = 4  # 2: origins (the platform and user a session came from); 3: indexes for reading a
    # session's rows and the usage of a period (the dashboard's pages on a big home), and on PostgreSQL
    # the one search reads the newest matches through; 4: `sessions.updated` kept by the database, and
    # session_prompts (the system prompt a conversation was started with, sent again by every request
    # that continues it)
    upgrades = {4: _TOUCH_ALL}
    pg_upgrades = PG_UPGRADES
    synchronous = "NORMAL"
    home_file = "sessions.db"  # what `hermes state migrate` copies, in this order
    migrate_tables = ("sessions", "messages", "tool_calls", "usage", "origins", "compressions", "session_prompts")

    def __init__(self, home: Path, *, url: StateUrl | str | None = None) -> None:
        super().__init__(Path(home) / "sessions.db", url=url)
        self._seqs: dict[str, int] = {}  # the last sequence number given out, per session
        self._order = "rowid" if self.dialect == "sqlite" else "id"  # the order rows were written in

    def _rolled_back(self) -> None:
        self._seqs.clear()

    def _text(self, value: Any) -> Any:
        """`value` as a text column takes it: PostgreSQL's text holds no NUL character (U+FFFD in its place)."""
        value = storable_text(value)
        return value.replace("\x00", "\ufffd") if self.dialect == "postgresql" and isinstance(value, str) else value

    # -- writing ------------------------------------------------------------------------

    @contextmanager
    def step(self) -> Iterator[None]:
        """One step of the agent's loop: the writes made inside the block (usage, the assistant
        message, the tools' results) are committed together, in one transaction, when it ends.
        A crash of the process inside the block loses that step; every step before it stays.

        >>> with store.step():
        ...     store.usage(session_id, "openai", "gpt-4o", 1200, 80, 0.001)
        ...     store.append(session_id, {"role": "assistant", "content": "Done."})
        """
        with self._batch():
            yield

    def start(self, session_id: str, model: str, *, platform: str = "", user: str = "") -> None:
        """Record a session (nothing when it exists): its model, and where it came from (the
        platform, and the user who started it: a gateway's sender, an API caller's `X-Hermes-User`)."""
        now = time.time()
        model, platform, user = (self._text(v) for v in (model, platform, user))

        def write(db: Any) -> None:
            db.execute("INSERT INTO sessions(id, model, created, updated) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (id) DO NOTHING", (session_id, model, now, now))
            if platform or user:
                db.execute('INSERT INTO origins(session_id, platform, "user") VALUES (?, ?, ?) '
                           "ON CONFLICT (session_id) DO NOTHING", (session_id, platform, user))

        self._write(write)
        with self._lock:  # a session started here has no message yet, as a rule: no need to ask for the
            # next number (`append` finds the right one when it had some after all)
            self._seqs.setdefault(session_id, 0)

    def append(self, session_id: str, message: Message) -> int:
        """Store one message (now, or at the end of the open `step()`); returns its sequence
        number in the session."""
        now = time.time()
        role, text = self._text(str(message.get("role"))), self._text(message_text(message))
        body = storable_json(message, default=str)
        with self._lock:
            last = self._seqs.get(session_id)
            seq = [(self._last_seq(session_id) if last is None else last) + 1]
            self._seqs[session_id] = seq[0]

            def write(db: Any) -> None:
                while db.execute(_INSERT_MESSAGE, (session_id, seq[0], role, body, text, now)).rowcount == 0:
                    # another process appended to this session meanwhile: the next number after its
                    # (on PostgreSQL a third may take that one too before this commits: again)
                    seq[0] = int(db.execute(_NEXT_SEQ, (session_id,)).fetchone()[0])
                    self._seqs[session_id] = max(self._seqs.get(session_id, 0), seq[0])
                if role == "user" and seq[0] <= 2:
                    db.execute("UPDATE sessions SET title = ? WHERE id = ? AND title = ''",
                               (" ".join(text.split())[:80], session_id))

            self._write(write)
        return seq[0]

    def last_seq(self, session_id: str) -> int:
        """The sequence number of a session's last message: how many it has (0: none, or no such session)."""
        return self._last_seq(session_id)

    def written_seq(self, session_id: str) -> int:
        """The sequence number of the last message this store wrote or read in a session (after a
        turn: where that turn ended), read from the database when it has none."""
        with self._lock:
            known = self._seqs.get(session_id)
        return known if known else self._last_seq(session_id)  # 0: only `start`'s guess, no message seen

    def _last_seq(self, session_id: str) -> int:
        with self._reading() as db:
            found = None if db is None else db.execute(
                "SELECT max(seq) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]
        return int(found or 0)

    def tool_call(self, session_id: str, call_id: str, name: str, arguments: Any, result: str) -> None:
        row = (session_id, self._text(call_id), self._text(name),
               self._text(arguments) if isinstance(arguments, str) else storable_json(arguments), self._text(result),
               time.time())
        self._write(lambda db: db.execute(
            "INSERT INTO tool_calls (session_id, call_id, name, arguments, result, created) VALUES (?, ?, ?, ?, ?, ?)",
            row))

    def usage(self, session_id: str, provider: str, model: str, input_tokens: int, output_tokens: int,
              cost: float | None) -> None:
        row = (session_id, self._text(provider), self._text(model), input_tokens, output_tokens, cost, time.time())
        self._write(lambda db: db.execute(
            "INSERT INTO usage (session_id, provider, model, input_tokens, output_tokens, cost, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", row))

    def compression(self, session_id: str, engine: str, replaced: Sequence[Message],
                    window: Sequence[Message]) -> None:
        """A compression event: the window before (`replaced`) and after."""
        row = [session_id, 0, self._text(engine), storable_json(list(replaced), default=str),
               storable_json(list(window), default=str), time.time()]

        def write(db: Any) -> None:
            row[1] = db.execute("SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?",
                                (session_id,)).fetchone()[0]
            db.execute('INSERT INTO compressions (session_id, at_seq, engine, replaced, "window", created) '
                       "VALUES (?, ?, ?, ?, ?, ?)", row)

        self._write(write)

    def save_prompt(self, session_id: str, prompt: dict[str, Any]) -> None:
        """Keep the system prompt a conversation was started with (`prompt`: its parts, as
        `SystemPrompt.stored()` gives them), in place of one kept before (after a `/reset`)."""
        row = (session_id, storable_json(prompt), time.time())
        self._write(lambda db: db.execute(
            "INSERT INTO session_prompts (session_id, prompt, created) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET prompt = excluded.prompt, created = excluded.created", row))

    # -- reading ------------------------------------------------------------------------

    def prompt(self, session_id: str) -> dict[str, Any] | None:
        """The system prompt kept with a session (None: none kept, or no such session)."""
        with self._reading() as db:
            row = None if db is None else db.execute(
                "SELECT prompt FROM session_prompts WHERE session_id = ?", (session_id,)).fetchone()
        return None if row is None else _prompt(row[0])

    def window(self, session_id: str) -> Messages | None:
        """The conversation to resume: the window after the last compression and the messages
        written since (None when there is no such session)."""
        found = self._window(session_id, "NULL")
        return None if found is None else found[0]

    def title(self, session_id: str) -> str:
        """The session's title (its first words); "" when it has none or there is no such session."""
        with self._reading() as db:
            row = None if db is None else db.execute("SELECT title FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return str(row[0]) if row is not None and row[0] else ""

    def resumed(self, session_id: str) -> tuple[Messages, dict[str, Any] | None] | None:
        """The conversation to resume (as `window`) and the system prompt kept with it (None: none
        was kept), read together; None when there is no such session."""
        found = self._window(session_id, "(SELECT p.prompt FROM session_prompts p WHERE p.session_id = s.id)")
        if found is None:
            return None
        window, prompt = found
        return window, _prompt(prompt)

    def _window(self, session_id: str, prompt: str) -> tuple[Messages, str | None] | None:
        with self._reading() as db:
            # the session, its last compression (and its prompt) in one statement (no row: no such session)
            last = None if db is None else db.execute(
                f'SELECT c.at_seq, c."window", {prompt} FROM sessions s LEFT JOIN compressions c '
                f"ON c.session_id = s.id WHERE s.id = ? ORDER BY c.{self._order} DESC LIMIT 1",
                (session_id,)).fetchone()
            if last is None:
                return None
            at_seq, window = (int(last[0]), json.loads(last[1])) if last[1] is not None else (0, [])
            rows = db.execute("SELECT seq, body FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
                              (session_id, at_seq)).fetchall()
        with self._lock:  # the next message's number, known without asking again (`append` corrects it if
            # another process appended meanwhile)
            self._seqs[session_id] = max(self._seqs.get(session_id, 0), int(rows[-1][0]) if rows else at_seq)
        return [m for m in window if m.get("role") != "system"] + [json.loads(r[1]) for r in rows], last[2]

    def sessions(self, limit: int = 50, *, user: str | None = None, offset: int = 0,
                 ids: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The latest sessions first (`user`: only those that user started; `ids`: only these), with
        their counts."""
        conditions: list[str] = []
        args: list[Any] = []
        if user is not None:
            conditions.append('o."user" = ?')
            args.append(user)
        if ids is not None:
            conditions.append("s.id IN (SELECT value FROM json_each(?))" if self.dialect == "sqlite"
                              else "s.id IN (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))")
            args.append(json.dumps(sorted(ids)))
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        with self._reading() as db:
            # the page first (along `sessions_updated`), then its rows' counts
            rows = [] if db is None else db.execute(
                "SELECT p.id, p.title, p.model, p.created, p.updated, "
                "(SELECT count(*) FROM messages m WHERE m.session_id = p.id), "
                "(SELECT coalesce(sum(input_tokens), 0) FROM usage u WHERE u.session_id = p.id), "
                "(SELECT coalesce(sum(output_tokens), 0) FROM usage u WHERE u.session_id = p.id), "
                "(SELECT sum(cost) FROM usage u WHERE u.session_id = p.id), "
                "(SELECT count(*) FROM compressions c WHERE c.session_id = p.id), p.platform, p.origin_user "
                "FROM (SELECT s.id, s.title, s.model, s.created, s.updated, "
                """coalesce(o.platform, '') AS platform, coalesce(o."user", '') AS origin_user """
                f"FROM sessions s LEFT JOIN origins o ON o.session_id = s.id {where} "
                "ORDER BY s.updated DESC, s.created DESC, s.id LIMIT ? OFFSET ?) AS p "
                "ORDER BY p.updated DESC, p.created DESC, p.id", (*args, limit, offset)).fetchall()
        keys = ("id", "title", "model", "created", "updated", "messages", "input_tokens", "output_tokens", "cost",
                "compressions", "platform", "user")
        return [dict(zip(keys, row)) for row in rows]

    def count(self, query: str | None = None, *, user: str | None = None, at_most: int | None = None) -> int:
        """How many sessions there are (`user`: that user started), or (with `query`) how many
        messages `search` would find (`at_most`: counting no further, for "10,000+")."""
        terms = fts_phrases(query) if query is not None else []
        with self._reading() as db:
            if db is None or (query is not None and not terms):
                return 0
            if query is None and user is not None:
                return int(db.execute('SELECT count(*) FROM origins WHERE "user" = ?', (user,)).fetchone()[0])
            if query is None:
                return int(db.execute("SELECT count(*) FROM sessions").fetchone()[0])
            cap = () if at_most is None else (at_most,)
            if self.dialect == "sqlite":
                hits = "SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?" + (" LIMIT ?" if cap else "")
                return int(db.execute(f"SELECT count(*) FROM ({hits})", (" OR ".join(terms), *cap)).fetchone()[0])
            chunks = pg_chunks(terms)
            return int(db.execute(pg_count(len(chunks), bool(cap)), (*chunks, *cap)).fetchone()[0]) if chunks else 0

    def search(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        """The messages that match `query` (any of its whitespace-separated chunks, each a phrase),
        the best first, each with a snippet marking the matched words `[like this]`. Of a query
        matching more than `RANKED` (2,000) messages, or `limit` when more, the newest are ranked."""
        terms = fts_phrases(query)
        with self._reading() as db:
            if db is None or not terms:
                return []
            if self.dialect == "sqlite":
                match = " OR ".join(terms)
                rows = db.execute(  # the newest RANKED matches ranked: FTS5 reads rowids backwards cheaply
                    "SELECT m.session_id, m.seq, m.role, snippet(messages_fts, 0, '[', ']', '…', 12) "
                    "FROM messages_fts JOIN messages AS m ON m.rowid = messages_fts.rowid "
                    "WHERE messages_fts MATCH ? AND messages_fts.rowid >= coalesce((SELECT rowid FROM messages_fts "
                    "WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?), 0) "
                    "ORDER BY bm25(messages_fts) LIMIT ?", (match, match, max(RANKED, limit) - 1, limit)).fetchall()
            elif not (chunks := pg_chunks(terms)):
                rows = []
            else:
                found = db.execute(pg_search(len(chunks)), (*chunks, max(RANKED, limit), limit)).fetchall()
                rows = [(*row[:3], ("…" if row[4] else "") + row[3] + ("…" if row[5] else "")) for row in found]
        return [{"session_id": r[0], "seq": r[1], "role": r[2], "snippet": r[3]} for r in rows]

    def usage_by_day(self, since: float, until: float = float("inf")) -> list[dict[str, Any]]:
        """The agent's model usage per UTC day and model from `since` to before `until` (seconds since
        the epoch): day, model, input and output tokens, cost (None when no price was known), by day
        then model."""
        day = "CAST(created / 86400 AS INTEGER)" if self.dialect == "sqlite" else "CAST(floor(created / 86400) AS BIGINT)"
        with self._reading() as db:
            rows = [] if db is None else db.execute(
                f"SELECT {day} AS day, model, sum(input_tokens), sum(output_tokens), sum(cost) FROM usage "
                "WHERE created >= ? AND created < ? GROUP BY day, model ORDER BY day, model",
                (since, min(until, 1e18))).fetchall()
        return [{"day": time.strftime("%Y-%m-%d", time.gmtime(int(r[0]) * 86400)), "model": r[1],
                 "input_tokens": int(r[2]), "output_tokens": int(r[3]), "cost": None if r[4] is None else float(r[4])}
                for r in rows]

    def show(self, session_id: str) -> dict[str, Any] | None:
        """A session with its messages, tool calls, usage and compression events."""
        with self._reading() as db:
            if db is None:
                return None
            head = db.execute("SELECT s.id, s.title, s.model, s.created, s.updated, "
                              """coalesce(o.platform, ''), coalesce(o."user", '') FROM sessions s """
                              "LEFT JOIN origins o ON o.session_id = s.id WHERE s.id = ?", (session_id,)).fetchone()
            if head is None:
                return None
            messages = [json.loads(r[0]) for r in db.execute(
                "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))]
            calls = [dict(zip(("call_id", "name", "arguments", "result"), r)) for r in db.execute(
                "SELECT call_id, name, arguments, result FROM tool_calls WHERE session_id = ? "
                f"ORDER BY {self._order}", (session_id,))]
            usage = [dict(zip(("provider", "model", "input_tokens", "output_tokens", "cost"), r)) for r in db.execute(
                "SELECT provider, model, input_tokens, output_tokens, cost FROM usage WHERE session_id = ? "
                f"ORDER BY {self._order}", (session_id,))]
            compressions = [{"at_seq": r[0], "engine": r[1], "replaced": len(json.loads(r[2])),
                             "window": json.loads(r[3])} for r in db.execute(
                'SELECT at_seq, engine, replaced, "window" FROM compressions WHERE session_id = ? '
                f"ORDER BY {self._order}", (session_id,))]
        return {"id": head[0], "title": head[1], "model": head[2], "created": head[3], "updated": head[4],
                "platform": head[5], "user": head[6], "messages": messages, "tool_calls": calls, "usage": usage,
                "compressions": compressions}
