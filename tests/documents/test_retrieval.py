"""Search without a worker: the vectors' nearest, full-text's matches, their fusion, and reads
kept to the collections asked (vectors written here, not by the model)."""

from __future__ import annotations

import numpy as np
from django.db.models import F

from documents import fulltext, selectors, services, vectors
from documents.models import Chunk, Collection, Document
from tests import factories


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def add_chunks(collection: Collection, texts_and_vectors: list[tuple[str, np.ndarray]]) -> list[Chunk]:
    path = f"doc-{Document.objects.count()}.txt"
    document = Document.objects.create(
        collection=collection, source="upload", path=path, size=1, mtime_ns=1, status="indexed"
    )
    chunks = [
        Chunk.objects.create(
            collection=collection, document=document, position=i, text=text, embedding=vectors.to_bytes(vector)
        )
        for i, (text, vector) in enumerate(texts_and_vectors)
    ]
    Collection.objects.filter(id=collection.id).update(version=F("version") + 1)
    return chunks


def test_vectors_rank_by_cosine_and_follow_the_collections_version(db):
    ada = factories.user("ada")
    collection = services.collection_create(owner=ada, name="Vectors")
    north, east, northeast = add_chunks(
        collection, [("north", unit(0, 1, 0)), ("east", unit(1, 0, 0)), ("northeast", unit(1, 1, 0))]
    )
    collection.refresh_from_db()
    found = vectors.search(unit(0.2, 1, 0), [collection], 2)
    assert [cid for cid, _ in found] == [north.id, northeast.id]
    assert found[0][1] > found[1][1]

    (west,) = add_chunks(collection, [("west", unit(-1, 0.3, 0))])
    collection.refresh_from_db()  # a new version: the cached matrix is read again
    assert vectors.search(unit(-1, 0, 0), [collection], 1)[0][0] == west.id
    assert east.id not in [cid for cid, _ in vectors.search(unit(-1, 0, 0), [collection], 2)]


def test_full_text_matches_words_and_ranks_the_chunk_with_more_of_them_first(db):
    ada = factories.user("ada")
    collection = services.collection_create(owner=ada, name="Words")
    boiler, both, other = add_chunks(
        collection,
        [
            ("The boiler was serviced.", unit(1, 0)),
            ("The boiler pressure was low; the plumber came.", unit(0, 1)),
            ("Crème brûlée recipe.", unit(1, 1)),
        ],
    )
    assert fulltext.search("boiler plumber", [collection.id], 10) == [both.id, boiler.id]
    assert fulltext.search("creme brulee", [collection.id], 10) == [other.id]  # diacritics folded
    assert fulltext.search('" OR * NEAR(', [collection.id], 10) == []  # no syntax from the query
    assert fulltext.search("boiler", [], 10) == []


def test_full_text_leaves_out_words_most_chunks_have_once_there_are_enough_chunks(db, monkeypatch):
    ada = factories.user("ada")
    collection = services.collection_create(owner=ada, name="Common")
    texts = [f"The note number {i} of the house." for i in range(18)]
    notes = add_chunks(collection, [(t, unit(1, 0)) for t in texts])
    (boiler,) = add_chunks(collection, [("The boiler pressure of the house was low.", unit(0, 1))])
    (the_boiler,) = add_chunks(collection, [("the the the boiler", unit(0, 1))])  # bm25 likes "the" here

    # few chunks: every word is searched
    everything = fulltext.search("the house boiler", [collection.id], 50)
    assert set(everything) == {n.id for n in notes} | {boiler.id, the_boiler.id}

    monkeypatch.setattr(fulltext, "CUT_FROM_CHUNKS", 10)  # 20 chunks: "the" and "house" are in over 10%
    assert fulltext.uncommon(["the", "house", "boiler"]) == ["boiler"]
    assert set(fulltext.search("the house boiler", [collection.id], 50)) == {boiler.id, the_boiler.id}
    # all common: the rarest two are searched, so the question still finds something
    assert fulltext.uncommon(["the", "house", "note"]) == ["note", "house"]  # in 18 and 19 of 20
    assert set(fulltext.search("the house", [collection.id], 50)) == set(everything)


def test_full_text_finds_a_small_collections_match_below_many_better_ones_elsewhere(db, monkeypatch):
    """SQLite ranks every collection's matches first and keeps the asked collection's among the
    best limit x OVERFETCH; when too few are there, it ranks again over the asked collection."""
    ada, bob = factories.user("ada"), factories.user("bob")
    small = services.collection_create(owner=ada, name="Small")
    large = services.collection_create(owner=bob, name="Large")
    elsewhere = add_chunks(large, [(f"boiler boiler boiler note {i}", unit(1, 0)) for i in range(12)])
    (mine,) = add_chunks(small, [("The boiler was serviced in May.", unit(0, 1))])
    monkeypatch.setattr(fulltext, "OVERFETCH", 2)

    assert fulltext.search("boiler", [small.id], 3) == [mine.id]  # the 6 best are all elsewhere
    best = fulltext.search("boiler", [large.id], 3)  # the first ranking is enough here
    assert len(best) == 3 and set(best) <= {c.id for c in elsewhere}
    both = fulltext.search("boiler", [small.id, large.id], 50)
    assert len(both) == 13 and both[-1] == mine.id


def test_fusion_puts_a_chunk_both_searches_found_first_and_reads_only_the_asked_collection(db):
    ada, bob = factories.user("ada"), factories.user("bob")
    mine = services.collection_create(owner=ada, name="Mine")
    theirs = services.collection_create(owner=bob, name="Theirs")
    a, b, c = add_chunks(mine, [("alpha", unit(1, 0)), ("beta", unit(0, 1)), ("gamma", unit(1, 1))])
    (secret,) = add_chunks(theirs, [("secret", unit(1, 0))])

    hits = selectors.fuse([a.id, b.id], [b.id, c.id, secret.id], [mine.id], 10)
    assert [h.chunk.id for h in hits] == [b.id, a.id, c.id]
    assert (hits[0].fulltext_rank, hits[0].vector_rank) == (2, 1)
    assert secret.id not in [h.chunk.id for h in hits]  # a chunk of another collection never comes back

    assert [h.chunk.text for h in selectors.search(ada, mine.id, "beta", unit(0, 1), limit=1)] == ["beta"]
    assert [h.chunk.text for h in selectors.search(ada, mine.id, "beta", None, limit=3)] == ["beta"]
