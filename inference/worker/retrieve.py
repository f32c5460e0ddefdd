"""An answer's retrieve phase, before its prompt goes to the engine: for an answer with
document collections (a chat's "#" choices and attached files, or the API's `collections`), the
question's vector from this worker's embedding model, the hybrid search over the collections
its person reads (documents.retrieval), and the sources written into the question the model
reads. The sources are stored on the answer (its citations and Sources list)."""

from __future__ import annotations

import logging

import numpy as np
from django.conf import settings

from documents import retrieval
from inference import broadcast, events, model_library
from inference.engine.timing import now_ns
from inference.models import Conversation, Generation
from inference.worker import embedder

log = logging.getLogger(__name__)


def _query_vector(query: str) -> np.ndarray | None:
    """The question's unit vector, when this worker holds the embedding model (else None: the
    search is full-text alone)."""
    name = settings.BUNDLED_EMBEDDING_MODEL_PATH.name
    if not model_library.path_of(name).is_file():
        return None
    try:
        vector = embedder.embed(name, [query], truncate=True).vectors[0]
    except Exception:
        log.exception("answer's question could not be embedded; searching its words alone")
        return None
    return np.asarray(vector, dtype="<f4")


def retrieve_phase(generation: Generation, messages: list[dict]) -> tuple[list[dict], int]:
    """The prompt's messages with the sources put into the last question, and the phase's
    nanoseconds (0 when the answer has no collections, or none its person may read). Waiting
    for a file attached to the chat just before to be indexed is not counted: that is queue time."""
    if not generation.collections or not messages or messages[-1]["role"] != "user":
        return messages, 0
    collections = retrieval.readable(generation.user, generation.collections)
    if not collections:
        return messages, 0
    files_id = Conversation.objects.filter(id=generation.conversation_id).values_list("files_collection", flat=True)
    files = next((c for c in collections if c.id == files_id.first()), None)
    if files is not None:
        # A file attached just before the question is indexed first; a chosen collection being
        # re-scanned is searched as it is (its re-scan may take hours).
        retrieval.wait_indexed([files])
    broadcast.publish_for(generation, [events.phase(generation.id, "retrieve")])
    started = now_ns()
    question = messages[-1]["content"]
    sources = retrieval.retrieve(
        collections,
        question,
        _query_vector(question),
        limit=settings.HOMEAI_RETRIEVE_CHUNKS,
        whole_from=files,
    )
    elapsed = max(now_ns() - started, 1)
    Generation.objects.filter(id=generation.id).update(sources=sources)
    generation.sources = sources
    prompt = {**messages[-1], "content": retrieval.prompt_with_sources(question, sources)}
    return [*messages[:-1], prompt], elapsed
