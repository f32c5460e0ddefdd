"""This worker's embedding models: a llama.cpp context per model (and one more for index jobs,
below), loaded on its first batch and kept, each used by one batch at a time (a llama.cpp
context is not thread-safe; a batch of inputs is encoded together in as few decodes as fit, so
one at a time loses little).

An index job's batches are embedded in the background: while answers are being written, on a
thread of their own under SCHED_IDLE (it runs only on a core nothing else wants: nice 19 alone
still doubled the chats' median gap), and so are the threads llama.cpp starts from it (OpenMP's
team inherits its scheduling), so answers on the same cores take what they need first; while
none are, on a thread at normal priority (below, _background). That
thread has a context of its own (the weights are mapped once; a context adds its buffers), so a
question's embedding (the retrieve phase, /v1/embeddings) never waits behind an index job's
batch. On a 2-core box four chats' ITL p99 while a collection was indexed went from 2.07x their
p99 before to 1.09x (1.16x while the job shared the one context; manage.py bench_retrieval
--parts itl, docs/performance.md)."""

from __future__ import annotations

import base64
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import llama_cpp
import numpy as np
from django.conf import settings

from inference import model_library
from inference.dispatch import registry
from inference.models import EngineConfig
from inference.services import embeddings

log = logging.getLogger(__name__)
_contexts: dict[tuple[str, bool], llama_cpp.Llama] = {}  # by (model, background)
_locks = {False: threading.Lock(), True: threading.Lock()}


def _lower_priority() -> None:
    """This thread (and the threads it starts) under SCHED_IDLE: it runs only on a core no
    other thread wants, and any other thread that wakes takes the core at once."""
    try:
        os.sched_setscheduler(threading.get_native_id(), os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):  # not Linux, or not allowed: nice 19, the next best
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except OSError:
            log.warning("could not lower the background embedding thread's priority", exc_info=True)


# An index job's batches run on one of two threads, each with its own OpenMP team (a team is
# the calling thread's, and keeps the scheduling it was made with): under SCHED_IDLE while
# answers are being written, at normal priority while none are. SCHED_IDLE alone cost the job
# itself 1.7x with nothing else to do (91 pages: 140.6 s against 81.6 s on a 2-core Xeon): the
# worker's own small wake-ups (heartbeat, relays) preempt one of llama.cpp's two threads, and
# the other waits for it at the next barrier. At normal priority the inputs go in parts of
# NORMAL_PART, the answers looked at before each, so a question asked meanwhile waits at most
# for one part (a quarter of a second here) before the rest yields to it.
_background = {
    True: ThreadPoolExecutor(max_workers=1, thread_name_prefix="homeai-embed-idle", initializer=_lower_priority),
    False: ThreadPoolExecutor(max_workers=1, thread_name_prefix="homeai-embed-bg"),
}
NORMAL_PART = 8


class InputTooLong(ValueError):
    """An input is longer than the model reads, and the request asked not to cut it."""


@dataclass(frozen=True)
class Embedded:
    vectors: list[list[float]]  # unit length, one per input, in order
    prompt_tokens: int  # every input's tokens, [CLS] and [SEP] included, after truncation
    started_ns: int  # wall clock when this batch's turn came (after any batch before it)
    load_ms: float  # loading the model (0.0 when it was loaded already)
    compute_ms: float


def _threads() -> int:
    chosen = EngineConfig.current().threads
    threads = settings.HOMEAI_THREADS if chosen is None else chosen
    return threads or os.cpu_count() or 1


def _load(model_name: str) -> llama_cpp.Llama:
    """The model's context: its whole trained context in one batch, so an input of any length
    up to it is encoded in one decode, and short ones share a decode. With flash attention:
    several inputs share a decode, and llama.cpp's tiled kernel skips the tiles that pair one
    input's tokens with another's, where the plain path computes and masks them all (256
    chunks of Python's documentation: 13.6-15.7 against 6.8 chunks/s on 2 cores, vectors the
    same to a cosine of 1.00000)."""
    path = model_library.path_of(model_name)
    n_ctx = model_library.inspect(path).context_length or 512
    threads = _threads()
    return llama_cpp.Llama(
        str(path),
        embedding=True,
        n_ctx=n_ctx,
        n_batch=n_ctx,
        n_ubatch=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=settings.HOMEAI_GPU_LAYERS,
        flash_attn=True,
        verbose=False,
    )


def embed(
    model_name: str, texts: list[str], *, truncate: bool, background: bool = False, answering=lambda: True
) -> Embedded:
    """Unit vectors of texts; an input past the model's context is cut to it (truncate), or
    refused with InputTooLong naming the input and the limit. background: an index job's batch,
    on a background thread (the caller waiting for it) that yields the cores to answers while
    `answering()` says some are being written, and takes its share while none are."""
    if not background:
        return _embed(model_name, texts, truncate, False)
    parts: list[Embedded] = []
    done = 0
    while done < len(texts):
        idle = answering()
        part = texts[done:] if idle else texts[done : done + NORMAL_PART]
        parts.append(_background[idle].submit(_embed, model_name, part, truncate, True).result())
        done += len(part)
    if len(parts) == 1:
        return parts[0]
    return Embedded(
        vectors=[v for p in parts for v in p.vectors],
        prompt_tokens=sum(p.prompt_tokens for p in parts),
        started_ns=parts[0].started_ns,
        load_ms=sum(p.load_ms for p in parts),
        compute_ms=sum(p.compute_ms for p in parts),
    )


def _embed(model_name: str, texts: list[str], truncate: bool, background: bool) -> Embedded:
    with _locks[background]:
        started_ns = time.time_ns()
        started = time.perf_counter()
        context = _contexts.get((model_name, background))
        cold = context is None
        if context is None:
            context = _contexts[(model_name, background)] = _load(model_name)
        loaded = time.perf_counter()
        limit = context.n_ctx()
        if not truncate:
            for index, text in enumerate(texts):
                n_tokens = len(context.tokenize(text.encode("utf-8")))
                if n_tokens > limit:
                    raise InputTooLong(
                        f"Input {index} is {n_tokens:,} tokens; {model_name} reads at most {limit:,}. "
                        "Shorten it, or send truncate: true to embed its first part."
                    )
        vectors, prompt_tokens = context.embed(texts, normalize=True, truncate=True, return_count=True)
        done = time.perf_counter()
    return Embedded(
        vectors=vectors,
        prompt_tokens=prompt_tokens,
        started_ns=started_ns,
        load_ms=(loaded - started) * 1000 if cold else 0.0,
        compute_ms=(done - loaded) * 1000,
    )


def loaded() -> list[str]:
    """The embedding models this worker holds loaded (its heartbeat lists them)."""
    return sorted({name for name, _ in _contexts})


def batch_run(*, batch_id: int, texts: list[str], truncate: bool) -> None:
    """One embeddings request: claimed, embedded, its row ended, and its reply (the vectors as
    little-endian float32, base64: a third of JSON numbers' size) pushed to the waiting request."""
    batch = embeddings.embedding_batch_claim(batch_id=batch_id, worker=registry.worker_name())
    if batch is None:
        return
    try:
        result = embed(batch.model_name, texts, truncate=truncate)
    except InputTooLong as exc:
        embeddings.embedding_batch_fail(batch_id=batch_id, message=str(exc))
        registry.reply_embedding(batch_id, {"status": 400, "code": "input_too_long", "message": str(exc)})
        return
    except Exception:
        log.exception("embedding batch %s failed", batch_id)
        message = "The worker failed while embedding these inputs; its log says why."
        embeddings.embedding_batch_fail(batch_id=batch_id, message=message)
        registry.reply_embedding(batch_id, {"status": 500, "code": "internal_error", "message": message})
        return
    embeddings.embedding_batch_finish(
        batch_id=batch_id,
        prompt_tokens=result.prompt_tokens,
        queue_ms=max(result.started_ns - batch.t_arrive_ns, 0) / 1e6,
        load_ms=result.load_ms,
        compute_ms=result.compute_ms,
    )
    vectors = [base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii") for v in result.vectors]
    registry.reply_embedding(
        batch_id,
        {"status": 200, "vectors": vectors, "prompt_tokens": result.prompt_tokens, "load_ms": result.load_ms},
    )
