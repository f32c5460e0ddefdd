"""Full-text search over chunks: SQLite's FTS5 (an external-content table kept by triggers) on the
embedded default, PostgreSQL's own full-text search (a GIN index on the text's tsvector) there.
The project's only database-specific SQL beside /healthz's; the migration creates both sides'."""

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


def setup(schema_editor) -> None:
    for statement in _statements(schema_editor.connection.vendor, SQLITE_SETUP, POSTGRES_SETUP):
        schema_editor.execute(statement)


def teardown(schema_editor) -> None:
    for statement in _statements(schema_editor.connection.vendor, SQLITE_TEARDOWN, POSTGRES_TEARDOWN):
        schema_editor.execute(statement)


def _statements(vendor: str, sqlite: list[str], postgres: list[str]) -> list[str]:
    return {"sqlite": sqlite, "postgresql": postgres}.get(vendor, [])


def terms(query: str) -> list[str]:
    """The query's words, as the search matches them (any of them; the rank prefers more),
    lower case and without diacritics, as both indexes read the text."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", query.lower()) if not unicodedata.combining(c))
    return list(dict.fromkeys(WORD.findall(folded)))[:MAX_TERMS]


def search(query: str, collection_ids: list[int], limit: int) -> list[int]:
    """Ids of the chunks of these collections that match the query's words, best first."""
    words = terms(query)
    if not words or not collection_ids:
        return []
    marks = ",".join(["%s"] * len(collection_ids))
    if connection.vendor == "sqlite":
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        sql = (
            f"SELECT c.id FROM {FTS_TABLE} f JOIN documents_chunk c ON c.id = f.rowid"
            f" WHERE {FTS_TABLE} MATCH %s AND c.collection_id IN ({marks}) ORDER BY f.rank LIMIT %s"
        )
        params = [match, *collection_ids, limit]
    elif connection.vendor == "postgresql":
        tsquery = " | ".join(words)  # words of letters and digits: nothing tsquery reads as syntax
        sql = (
            f"SELECT id FROM documents_chunk WHERE {POSTGRES_VECTOR} @@ to_tsquery('simple', %s)"
            f" AND collection_id IN ({marks})"
            f" ORDER BY ts_rank({POSTGRES_VECTOR}, to_tsquery('simple', %s)) DESC, id LIMIT %s"
        )
        params = [tsquery, *collection_ids, tsquery, limit]
    else:
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]
