"""The session store's tables and search in PostgreSQL (`state.url`): the same tables as the
SQLite file, and PostgreSQL's own text search where SQLite has FTS5, read so that both find the
same messages for the same query (tests/fleet checks it)."""

from __future__ import annotations

import re

__all__ = ["PG_SCHEMA", "PG_UPGRADES", "RANKED", "pg_chunks", "pg_count", "pg_search"]

# The same tables in PostgreSQL: an id column where SQLite's rowid keeps the order, and the
# messages' words in a `tsvector` the database computes from `text` (GENERATED ... STORED) with a
# GIN index. The text is read the way FTS5's `unicode61` tokenizer reads it (runs of letters and
# digits; everything else separates words), folded by the `hermes_search` configuration: accents
# removed (`unaccent`, when the database lets it be created), Snowball's English stems, no stop
# words. The first 100,000 characters of a message are indexed (a tsvector holds at most 1 MB).
PG_SCHEMA = """
DO $$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS unaccent;
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'unaccent is not available: session search keeps accents';
    END;
    IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'hermes_english' AND pg_ts_dict_is_visible(oid)) THEN
        CREATE TEXT SEARCH DICTIONARY hermes_english (TEMPLATE = snowball, Language = english);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'hermes_search' AND pg_ts_config_is_visible(oid)) THEN
        CREATE TEXT SEARCH CONFIGURATION hermes_search (COPY = english);
        IF EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'unaccent' AND pg_ts_dict_is_visible(oid)) THEN
            ALTER TEXT SEARCH CONFIGURATION hermes_search ALTER MAPPING FOR asciiword, word, numword, asciihword,
                hword, numhword, hword_asciipart, hword_part, hword_numpart WITH unaccent, hermes_english;
        ELSE
            ALTER TEXT SEARCH CONFIGURATION hermes_search ALTER MAPPING FOR asciiword, word, numword, asciihword,
                hword, numhword, hword_asciipart, hword_part, hword_numpart WITH hermes_english;
        END IF;
    END IF;
END
$$;
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    text TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    words tsvector GENERATED ALWAYS AS (to_tsvector('hermes_search'::regconfig,
        regexp_replace(left(text, 100000), '[^[:alnum:]]+', ' ', 'g'))) STORED,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS messages_words ON messages USING GIN (words);
CREATE INDEX IF NOT EXISTS messages_created ON messages(created);
CREATE TABLE IF NOT EXISTS tool_calls (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_calls_session ON tool_calls(session_id);
CREATE TABLE IF NOT EXISTS usage (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost DOUBLE PRECISION,
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_session ON usage(session_id);
CREATE INDEX IF NOT EXISTS usage_created ON usage(created);
CREATE TABLE IF NOT EXISTS origins (
    session_id TEXT PRIMARY KEY,
    platform TEXT NOT NULL DEFAULT '',
    "user" TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS origins_user ON origins("user");
CREATE TABLE IF NOT EXISTS compressions (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL,
    at_seq INTEGER NOT NULL,
    engine TEXT NOT NULL,
    replaced TEXT NOT NULL,
    "window" TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS compressions_session ON compressions(session_id);
CREATE TABLE IF NOT EXISTS session_prompts (
    session_id TEXT PRIMARY KEY,
    prompt TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
"""

# Search on PostgreSQL: each chunk of the query a phrase (`phraseto_tsquery`), read as the stored
# text is, the phrases OR-ed; a snippet of about 12 words around the first match, marked [like this].
_WORDS = "regexp_replace(?, '[^[:alnum:]]+', ' ', 'g')"
_PHRASE = f"phraseto_tsquery('hermes_search'::regconfig, {_WORDS})"
_SNIPPET = ("ts_headline('hermes_search'::regconfig, m.text, q.query, "
            "'StartSel=[, StopSel=], MaxWords=12, MinWords=4, ShortWord=0, MaxFragments=1')")
RANKED = 2000  # how many of a query's matches search ranks, the newest (SQLite: by the order written)
# The best `limit` hits among the newest matches (RANKED, or `limit` when more: a word in half of a
# million messages is not ranked whole; the newest are read backwards through `messages_created`),
# then the snippet of each, with "…" where it cuts the text (as FTS5's snippet marks it; not when
# the text holds the marks themselves).
_SEARCH = f"""
SELECT hit.session_id, hit.seq, m.role, s.snippet,
       f.pos > 1 AND btrim(left(m.text, f.pos - 1), E' \\t\\r\\n') <> '',
       f.pos > 0 AND btrim(substr(m.text, f.pos + length(p.plain)), E' \\t\\r\\n') <> ''
FROM (SELECT {{query}} AS query) AS q
CROSS JOIN LATERAL (SELECT session_id, seq, ts_rank(words, q.query) AS rank
                    FROM (SELECT session_id, seq, words FROM messages WHERE words @@ q.query
                          ORDER BY created DESC LIMIT ?) AS newest
                    ORDER BY rank DESC, session_id, seq LIMIT ?) AS hit
JOIN messages AS m ON m.session_id = hit.session_id AND m.seq = hit.seq
CROSS JOIN LATERAL (SELECT {_SNIPPET} AS snippet) AS s
CROSS JOIN LATERAL (SELECT replace(replace(s.snippet, '[', ''), ']', '') AS plain) AS p
CROSS JOIN LATERAL (SELECT CASE WHEN strpos(m.text, '[') > 0 OR strpos(m.text, ']') > 0 OR btrim(p.plain) = ''
                    THEN 0 ELSE strpos(m.text, p.plain) END AS pos) AS f
ORDER BY hit.rank DESC, hit.session_id, hit.seq
"""
# Schema 4: the database keeps `sessions.updated` at the session's last message (see store.py).
_TOUCH = """
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated DESC, created DESC, id);
CREATE OR REPLACE FUNCTION hermes_sessions_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET updated = NEW.created WHERE id = NEW.session_id AND updated < NEW.created;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS messages_touch ON messages;
CREATE TRIGGER messages_touch AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION hermes_sessions_touch();
"""
PG_SCHEMA += _TOUCH
PG_UPGRADES = {3: "CREATE INDEX IF NOT EXISTS usage_created ON usage(created);\n"
                  "CREATE INDEX IF NOT EXISTS messages_created ON messages(created);",
               4: "CREATE TABLE IF NOT EXISTS session_prompts (session_id TEXT PRIMARY KEY, prompt TEXT NOT NULL, "
                  "created DOUBLE PRECISION NOT NULL);\n"
                  "UPDATE sessions SET updated = m.last FROM (SELECT session_id, max(created) AS last FROM messages "
                  "GROUP BY session_id) AS m WHERE m.session_id = sessions.id AND sessions.updated < m.last;" + _TOUCH}
_HAS_WORD = re.compile(r"[^\W_]")  # a letter or digit: a chunk without one finds nothing on either


def pg_chunks(phrases: list[str]) -> list[str]:
    """The chunks of a query `fts_phrases` quoted, back as text, those with a word in them."""
    chunks = [phrase[1:-1].replace('""', '"') for phrase in phrases]
    return [chunk for chunk in chunks if _HAS_WORD.search(chunk)]


def _query(n: int) -> str:
    """A tsquery of `n` phrases, OR-ed."""
    return " || ".join([_PHRASE] * n)


def pg_count(n: int, capped: bool = False) -> str:
    """How many messages match a query of `n` chunks (the chunks its parameters; `capped`: then at
    most how many to count)."""
    if capped:
        return f"SELECT count(*) FROM (SELECT 1 FROM messages WHERE words @@ ({_query(n)}) LIMIT ?) AS hits"
    return f"SELECT count(*) FROM messages WHERE words @@ ({_query(n)})"


def pg_search(n: int) -> str:
    """The best hits of a query of `n` chunks (its parameters: the chunks, how many of the newest
    matches to rank, then the limit): session,
    seq, role, snippet, and whether the snippet starts and ends inside the text."""
    return _SEARCH.format(query=_query(n))

