"""A chat's documents: the collections its answers draw from ("#" in the composer) and the
files attached to it, kept in the chat's own private collection and indexed by a worker."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext

from documents import retrieval
from documents import services as document_services
from documents.models import Collection
from inference.models import Conversation
from inference.services import indexing
from inference.services.conversations import own_conversation
from infra.errors import ClientError

MAX_COLLECTIONS = 20  # a chat (or an API request) draws from at most this many collections


def readable_choice(user, ids) -> list[Collection]:
    """The collections named (a list of ids), each one the person reads; not_found for any
    other, as for one that does not exist."""
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ClientError("bad_request", gettext("collections is a list of collection ids."), field="collections")
    if len(ids) > MAX_COLLECTIONS:
        raise ClientError(
            "bad_request",
            gettext("Choose at most %(n)s collections.") % {"n": MAX_COLLECTIONS},
            field="collections",
        )
    found = retrieval.readable(user, ids)
    if len(found) != len(set(ids)):
        raise ClientError(
            "not_found", gettext("No such collection, or it is not shared with you."), field="collections"
        )
    return found


def answer_collections(conversation: Conversation) -> list[int]:
    """What a chat's next answer searches: its attached files' collection and its choices."""
    chosen = list(conversation.collections.values_list("id", flat=True))
    files = [conversation.files_collection_id] if conversation.files_collection_id else []
    return list(dict.fromkeys([*files, *chosen]))


def chat_file_attach(*, user, conversation_id: int | None, name: str, chunks) -> dict:
    """Keep a file attached to a chat (a new chat when conversation_id is None) in the chat's own
    private collection (made with its first file) and start indexing it on a worker. The chat's
    next answer waits for the indexing, then reads a short file whole and searches a long one."""
    with transaction.atomic():
        if conversation_id is None:
            conversation = Conversation.objects.create(user=user, title=name.strip()[:120] or "…")
        else:
            conversation = own_conversation(user=user, conversation_id=conversation_id)
        collection = conversation.files_collection
        if collection is None:
            collection = document_services.collection_create(
                owner=user, name=gettext("Chat files: %(title)s") % {"title": conversation.title}
            )
            conversation.files_collection = collection
            conversation.save(update_fields=["files_collection"])
    kept = document_services.upload_add(collection=collection, name=name, chunks=chunks)
    holders = indexing.embedding_holders()
    job, _new = indexing.index_start(user=user, collection=collection, holders=holders)
    return {
        "conversation": conversation.id,
        "title": conversation.title,
        "collection": collection.id,
        "name": kept,
        "job": job.id,
        "indexing": bool(holders),
    }
