"""Full-text search over chunks: SQLite's FTS5 (an external-content table kept by triggers) on the
embedded default, PostgreSQL's own full-text search (a GIN index on the text's tsvector) there.
The project's only database-specific SQL beside /healthz's; the migrations create both sides'.

A query's common words are left out once there are enough chunks for it to matter: a word found
in more than COMMON_SHARE of all chunks ("how", "the", "a") weighs next to nothing in the rank
(bm25 / ts_rank), but every chunk that has one is a match to rank. On 10^5 chunks of Python's
documentation (manage.py bench_retrieval) that took the hybrid search's p50 from 208 to 46.5 ms
(docs/performance.md), with recall@5 1.0 and MRR 0.954 on its questions. When every word is
common the rarest KEEP_WHEN_COMMON are searched. The counts: each word's matches through the
index, stopped past the threshold (on SQLite 4.7 ms for a question's words at 10^5 chunks,
where FTS5's own per-word counts, an fts5vocab table, took 13 ms: they read a common word's
whole list of chunks).

On SQLite the matches are ranked by FTS5 alone first (bm25() and SQLite's top-N sort: 21.5 ms at
10^5 where ranking them through the join with the chunks' collections took 28.5), and the
search's collections kept among the best; only when too few of those are in the search's
collections is the ranking done again through the join (sqlite_ranked)."""

from __future__ import annotations

import re
import unicodedata

from django.db import connection

FTS_TABLE = "documents_chunk_fts"

SQLITE_SETUP = [
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(text, content='documents_chunk', content_rowid='id',"
    " tokenize='unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER documents_chunk_ai AFTER INSERT ON documents_chunk BEGIN"
    f" INSERT INTO {FTS_TABLE}(rowid, text) VALUES (new.id, new.text); END",
    f"CREATE TRIGGER documents_chunk_ad AFTER DELETE ON documents_chunk BEGIN"
    f" INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, text) VALUES ('delete', old.id, old.text); END",
    f"CREATE TRIGGER documents_chunk_au AFTER UPDATE ON documents_chunk BEGIN"
    f" INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, text) VALUES ('delete', old.id, old.text);"
    f" INSERT INTO {FTS_TABLE}(rowid, text) VALUES (new.id, new.text); END",
]
VOCAB_TABLE = f"{FTS_TABLE}_vocab"  # FTS5's per-word counts (migration 0002; dropped by 0003)
SQLITE_VOCAB_SETUP = [f"CREATE VIRTUAL TABLE {VOCAB_TABLE} USING fts5vocab({FTS_TABLE}, 'row')"]
SQLITE_VOCAB_TEARDOWN = [f"DROP TABLE IF EXISTS {VOCAB_TABLE}"]
SQLITE_TEARDOWN = [
    "DROP TRIGGER IF EXISTS documents_chunk_ai",
    "DROP TRIGGER IF EXISTS documents_chunk_ad",
    "DROP TRIGGER IF EXISTS documents_chunk_au",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]


def _latin_folds() -> tuple[str, str]:
    """Latin letters with diacritics (both cases) and their bare letters, for PostgreSQL's
    translate(): what FTS5's remove_diacritics does on SQLite, without the unaccent extension
    (which needs a superuser to install)."""
    accented, bare = [], []
    for code in range(0xC0, 0x250):
        letter = chr(code)
        base = "".join(c for c in unicodedata.normalize("NFKD", letter) if not unicodedata.combining(c))
        if len(base) == 1 and base.isascii() and base.isalpha() and base != letter:
            accented.append(letter)
            bare.append(base.lower())
    return "".join(accented), "".join(bare)


FOLD_FROM, FOLD_TO = _latin_folds()
# 'simple': no language's stemming, since a household's files are in several languages. The
# query repeats the index's expression (literals, not parameters) so the planner uses the index.
POSTGRES_VECTOR = f"to_tsvector('simple', translate(lower(text), '{FOLD_FROM}', '{FOLD_TO}'))"
POSTGRES_SETUP = [f"CREATE INDEX documents_chunk_tsv ON documents_chunk USING GIN ({POSTGRES_VECTOR})"]
POSTGRES_TEARDOWN = ["DROP INDEX IF EXISTS documents_chunk_tsv"]

WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 32
COMMON_SHARE = 0.1  # a word in more than this share of all chunks is left out of a query
KEEP_WHEN_COMMON = 2  # the rarest this many are searched when every word of a query is common
CUT_FROM_CHUNKS = 1000  # below this many chunks every word is searched (ranking them all is cheap)
OVERFETCH = 4  # SQLite: the best limit x this many matches of all collections are ranked first


def setup(schema_editor) -> None:
    for statement in _statements(schema_editor.connection.vendor, SQLITE_SETUP, POSTGRES_SETUP):
        schema_editor.execute(statement)


def teardown(schema_editor) -> None:
    for statement in _statements(schema_editor.connection.vendor, SQLITE_TEARDOWN, POSTGRES_TEARDOWN):
        schema_editor.execute(statement)


def setup_vocab(schema_editor) -> None:
    for statement in _statements(schema_editor.connection.vendor, SQLITE_VOCAB_SETUP, []):
        schema_editor.execute(statement)


def teardown_vocab(schema_editor) -> None:
    for statement in _statements(schema_editor.connection.vendor, SQLITE_VOCAB_TEARDOWN, []):
        schema_editor.execute(statement)


def _statements(vendor: str, sqlite: list[str], postgres: list[str]) -> list[str]:
    return {"sqlite": sqlite, "postgresql": postgres}.get(vendor, [])


def terms(query: str) -> list[str]:
    """The query's words, as the search matches them (any of them; the rank prefers more),
    lower case and without diacritics, as both indexes read the text."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", query.lower()) if not unicodedata.combining(c))
    return list(dict.fromkeys(WORD.findall(folded)))[:MAX_TERMS]


def _chunks_with(words: list[str], cap: int) -> dict[str, int]:
    """In how many chunks each word is (of all collections), counted up to cap + 1: each word's
    matches through the index, the count stopped past cap (a common word's whole list of
    chunks is never read)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            values = ",".join(["(%s)"] * len(words))
            cursor.execute(
                f"WITH w(term) AS (VALUES {values}) SELECT term, (SELECT count(*) FROM (SELECT 1 FROM {FTS_TABLE}"
                f" WHERE {FTS_TABLE} MATCH '\"' || term || '\"' LIMIT %s)) FROM w",
                [*words, cap + 1],
            )
            return dict(cursor.fetchall())
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT w, (SELECT count(*) FROM (SELECT 1 FROM documents_chunk"
                f" WHERE {POSTGRES_VECTOR} @@ to_tsquery('simple', w) LIMIT %s) s)"
                " FROM unnest(%s::text[]) AS w",
                [cap + 1, words],
            )
            return dict(cursor.fetchall())
    return {}


def uncommon(words: list[str]) -> list[str]:
    """The words worth searching for: those in at most COMMON_SHARE of all chunks (all of them
    while there are fewer than CUT_FROM_CHUNKS chunks), else the rarest KEEP_WHEN_COMMON."""
    if len(words) <= 1:
        return words
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents_chunk")
        total = cursor.fetchone()[0]
    if total < CUT_FROM_CHUNKS:
        return words
    cap = int(COMMON_SHARE * total)
    counts = _chunks_with(words, cap)
    kept = [w for w in words if counts.get(w, 0) <= cap]
    if kept:
        return kept
    counts = _chunks_with(words, total)  # the counts stopped at cap: count again to find the rarest
    return sorted(words, key=lambda w: counts.get(w, 0))[:KEEP_WHEN_COMMON]


def sqlite_ranked(match: str, collection_ids: list[int], limit: int) -> list[int]:
    """The best `limit` chunks of these collections for an FTS5 query, best first.

    1. FTS5 ranks the matches of every collection (bm25(), the best limit x OVERFETCH kept).
    2. Those in the search's collections are kept, in order: done when they are `limit`, or
       when step 1 saw every match (fewer came back than it asked for).
    3. Otherwise (the search's collections hold few of the matches) the ranking is done again
       through the join with the chunks, over the search's collections' matches alone."""
    marks = ",".join(["%s"] * len(collection_ids))
    wanted = limit * OVERFETCH
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s ORDER BY bm25({FTS_TABLE}) LIMIT %s",
            [match, wanted],
        )
        ranked = [row[0] for row in cursor.fetchall()]
        if not ranked:
            return []
        ids = ",".join(["%s"] * len(ranked))
        cursor.execute(
            f"SELECT id FROM documents_chunk WHERE id IN ({ids}) AND collection_id IN ({marks})",
            [*ranked, *collection_ids],
        )
        theirs = {row[0] for row in cursor.fetchall()}
        best = [cid for cid in ranked if cid in theirs][:limit]
        if len(best) == limit or len(ranked) < wanted:
            return best
        cursor.execute(
            f"SELECT c.id FROM {FTS_TABLE} f JOIN documents_chunk c ON c.id = f.rowid"
            f" WHERE {FTS_TABLE} MATCH %s AND c.collection_id IN ({marks}) ORDER BY f.rank LIMIT %s",
            [match, *collection_ids, limit],
        )
        return [row[0] for row in cursor.fetchall()]


def search(query: str, collection_ids: list[int], limit: int) -> list[int]:
    """Ids of the chunks of these collections that match the query's words (its common words
    left out: uncommon()), best first."""
    words = terms(query)
    if not words or not collection_ids:
        return []
    words = uncommon(words)
    if connection.vendor == "sqlite":
        return sqlite_ranked(" OR ".join('"' + w.replace('"', '""') + '"' for w in words), collection_ids, limit)
    if connection.vendor != "postgresql":
        return []
    marks = ",".join(["%s"] * len(collection_ids))
    tsquery = " | ".join(words)  # words of letters and digits: nothing tsquery reads as syntax
    sql = (
        f"SELECT id FROM documents_chunk WHERE {POSTGRES_VECTOR} @@ to_tsquery('simple', %s)"
        f" AND collection_id IN ({marks})"
        f" ORDER BY ts_rank({POSTGRES_VECTOR}, to_tsquery('simple', %s)) DESC, id LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [tsquery, *collection_ids, tsquery, limit])
        return [row[0] for row in cursor.fetchall()]
