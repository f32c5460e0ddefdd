"""The chunk vectors searched in PostgreSQL with pgvector (documents/pgvector.py), on the suite's
PostgreSQL run (`make test-postgres` builds the extension into the local server where it can):
the generated column holds each stored vector exactly, the exact search and the graph's agree
with numpy's, and no chunk of another collection is ever returned."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from documents import apps, pgvector, selectors, services, vectors
from documents.models import Chunk, Collection, Document
from tests import factories
from tests.documents.test_retrieval import add_chunks

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector is PostgreSQL's")


@pytest.fixture
def in_database(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            pytest.skip("this PostgreSQL server has no pgvector (scripts/ensure-pgvector.sh)")
    assert pgvector.enable() == "on" and pgvector.in_database()


def random_units(rng: np.random.Generator, n: int, dims: int = 384) -> np.ndarray:
    matrix = rng.standard_normal((n, dims), dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_migrate_gave_the_chunks_a_vector_column_that_holds_each_stored_vector_exactly(in_database):
    collection = services.collection_create(owner=factories.user("ada"), name="Exact")
    rng = np.random.default_rng(1)
    stored = random_units(rng, 3, 16)
    stored[0, :4] = [1e-3, -0.0, 2.0**-20, 0.5]  # small values, a negative zero
    chunks = add_chunks(collection, [(f"c{i}", v) for i, v in enumerate(stored)])
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, vec::float4[] FROM documents_chunk WHERE id = ANY(%s)", [[c.id for c in chunks]])
        column = dict(cursor.fetchall())
    for chunk, vector in zip(chunks, stored, strict=True):
        assert np.array_equal(np.array(column[chunk.id], dtype=np.float32), vector)


def test_the_exact_search_in_the_database_is_numpys(in_database):
    ada = factories.user("ada")
    mine, other = (services.collection_create(owner=ada, name=n) for n in ("Mine", "Other"))
    rng = np.random.default_rng(2)
    add_chunks(mine, [(f"m{i}", v) for i, v in enumerate(random_units(rng, 120))])
    add_chunks(other, [(f"o{i}", v) for i, v in enumerate(random_units(rng, 120))])
    add_chunks(other, [(f"narrow{i}", v) for i, v in enumerate(random_units(rng, 3, 16))])  # another model's
    mine.refresh_from_db()
    for query in random_units(rng, 5):
        found = pgvector.exact(query, [mine.id, other.id], 10)
        assert {i for i, _ in found} & set(Chunk.objects.filter(collection=other).values_list("id", flat=True))
        found = pgvector.exact(query, [mine.id], 10)
        expected = vectors.nearest(query, vectors.matrices([mine]), 10)
        assert [i for i, _ in found] == [i for i, _ in expected]
        assert np.allclose([s for _, s in found], [s for _, s in expected], atol=1e-5)


def test_the_graph_search_keeps_to_the_collections_and_finds_their_nearest(in_database, monkeypatch):
    ada = factories.user("ada")
    mine, other = (services.collection_create(owner=ada, name=n) for n in ("Mine", "Other"))
    # The graph is made with the first chunks of a width (here before any: this test's
    # transaction holds the rows' deferred checks, under which no index can be made); the
    # rows written after it join it.
    monkeypatch.setattr(pgvector, "_indexed", set())
    vectors.written(384)
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [pgvector.graph_name(384)])
        assert cursor.fetchone()[0], "the graph of 384-dimension chunks was made"
    rng = np.random.default_rng(3)
    add_chunks(mine, [(f"m{i}", v) for i, v in enumerate(random_units(rng, 400))])
    # The other collection holds the query's own vectors: the nearest of all, never to be returned.
    queries = random_units(rng, 8)
    add_chunks(other, [(f"o{i}", v) for i, v in enumerate(np.vstack([queries, random_units(rng, 400)]))])
    mine_ids = set(Chunk.objects.filter(collection=mine).values_list("id", flat=True))
    found_in_graph = 0
    for query in queries:
        found = pgvector.graph(query, [mine.id], 10)
        assert len(found) == 10 and {i for i, _ in found} <= mine_ids
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        exact = {i for i, _ in vectors.nearest(query, vectors.matrices([mine]), 10)}
        found_in_graph += len(exact & {i for i, _ in found})
    assert found_in_graph >= 0.9 * 10 * len(queries)


def test_numpy_below_its_size_the_database_above_and_the_same_answers(in_database, monkeypatch):
    collection = services.collection_create(owner=factories.user("ada"), name="Some")
    rng = np.random.default_rng(4)
    add_chunks(collection, [(f"c{i}", v) for i, v in enumerate(random_units(rng, 50))])
    Document.objects.filter(collection=collection).update(chunks_count=50)
    collection.refresh_from_db()
    query = random_units(rng, 1)[0]
    assert vectors.in_database([collection]) == 0  # 50 chunks: numpy's, in this process
    in_process = vectors.search(query, [collection], 5)
    monkeypatch.setattr(vectors, "NUMPY_UP_TO", 10)
    assert vectors.in_database([collection]) == 50
    with vectors._lock:
        vectors._cache.clear()
    in_database = vectors.search(query, [collection], 5)
    assert not vectors._cache, "no matrix was read into the process"
    assert [i for i, _ in in_database] == [i for i, _ in in_process]


def test_hybrid_search_reads_only_the_readers_collections_in_the_database_too(in_database, monkeypatch):
    monkeypatch.setattr(vectors, "NUMPY_UP_TO", 0)
    ada, bo = factories.user("ada"), factories.user("bo")
    hers = services.collection_create(owner=ada, name="Hers")
    his = services.collection_create(owner=bo, name="His")
    (boiler,) = add_chunks(hers, [("The boiler was serviced in May.", np.eye(8, dtype=np.float32)[0])])
    add_chunks(his, [("The boiler of the other flat.", np.eye(8, dtype=np.float32)[0])])
    Document.objects.update(chunks_count=1)
    assert vectors.in_database([hers]) == 1
    hits = selectors.search(ada, hers.id, "boiler", np.eye(8, dtype=np.float32)[0], limit=5)
    assert [h.chunk.id for h in hits] == [boiler.id]
    assert hits[0].fulltext_rank == 1 and hits[0].vector_rank == 1


def _plain_collection(rng) -> Collection:
    collection = services.collection_create(owner=factories.user("ada"), name="Plain")
    add_chunks(collection, [(f"c{i}", v) for i, v in enumerate(random_units(rng, 30))])
    Document.objects.filter(collection=collection).update(chunks_count=30)
    collection.refresh_from_db()
    return collection


def _as_plain_user(cursor) -> None:
    """HomeAI's database user as a plain one: no superuser, the tables granted, the schema not
    its own (PostgreSQL 15 and later give nobody CREATE on `public`). Undone with the test's
    transaction."""
    cursor.execute("CREATE ROLE homeai_plain_user NOSUPERUSER")
    cursor.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO homeai_plain_user")
    cursor.execute("SET LOCAL ROLE homeai_plain_user")


def _migrate_warns_and_numpy_searches(collection, rng, monkeypatch, caplog, reason: str) -> None:
    monkeypatch.setattr(pgvector, "_known", {})
    monkeypatch.setattr(vectors, "NUMPY_UP_TO", 0)
    with caplog.at_level("WARNING", logger="documents.apps"):
        apps._vectors_in_database(sender=None, using="default")
    assert reason in caplog.text and "numpy" in caplog.text
    assert not pgvector.in_database() and vectors.in_database([collection]) == 0
    query = random_units(rng, 1)[0]
    found = vectors.search(query, [collection], 3)
    assert [i for i, _ in found] == [i for i, _ in vectors.nearest(query, vectors.matrices([collection]), 3)]


def test_a_database_user_who_may_not_create_the_extension_gets_numpy_and_a_reason(in_database, monkeypatch, caplog):
    """A PostgreSQL of one's own with pgvector offered but not created, and HomeAI's user no
    superuser: migrate says why, and the vectors are searched in the process."""
    rng = np.random.default_rng(5)
    collection = _plain_collection(rng)
    with connection.cursor() as cursor:  # all undone with the test's transaction
        cursor.execute("DROP EXTENSION vector CASCADE")  # the column, its function and graphs with it
        _as_plain_user(cursor)
    _migrate_warns_and_numpy_searches(collection, rng, monkeypatch, caplog, "may not create the vector extension")


def test_a_database_user_who_may_not_add_the_column_gets_numpy_and_a_reason(in_database, monkeypatch, caplog):
    """pgvector created by an administrator, but HomeAI's user may not create a function in the
    schema: migrate says why instead of stopping with PostgreSQL's error."""
    rng = np.random.default_rng(6)
    collection = _plain_collection(rng)
    with connection.cursor() as cursor:  # all undone with the test's transaction
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the new chunks' checks, before ALTER TABLE
        cursor.execute(f"ALTER TABLE documents_chunk DROP COLUMN {pgvector.COLUMN}")
        cursor.execute(f"DROP FUNCTION {pgvector.FUNCTION}(bytea)")
        _as_plain_user(cursor)
    _migrate_warns_and_numpy_searches(collection, rng, monkeypatch, caplog, "may not add the vector column")
