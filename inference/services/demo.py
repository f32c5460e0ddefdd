"""The shared-machine scenario, one click away for staff: three people's answers are being
written when a fourth person's long document arrives.

Raw prompts (no chat template) and ignore_eos, so the chats are still writing when the document
comes, whatever the model says. All its answers are tagged with the client "demo".
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from inference.dispatch import registry
from inference.models import Generation
from inference.services.generations import generation_create_api, generation_enqueue

DEMO_CHATS = (
    "The lighthouse keeper climbed the stairs every evening, and one night",
    "Tides rise and fall twice a day because",
    "Here are twenty birds of the northern coast, with one fact about each:",
)
DEMO_CHAT_TOKENS = 200
DEMO_POLL_S = 0.25  # how often the document's task looks whether the chats are writing yet
DEMO_WAIT_S = 60.0  # ... and when it gives up waiting and sends the document anyway
DEMO_DOCUMENT_LINES = 70  # about 1,500 tokens with the bundled model's tokenizer
DEMO_LINE = "Quarterly report line {i}: revenue grew, costs fell, and the team shipped the new release."


def demo_start(*, user) -> list[Generation]:
    """Start the scenario: the chats now, the document once they are all writing (a task
    creates it then, so its queue time and TTFT are its own)."""
    chats = [
        generation_create_api(
            user=user, client="demo", prompt=text, max_tokens=DEMO_CHAT_TOKENS, options={"ignore_eos": True}
        )
        for text in DEMO_CHATS
    ]
    for generation in chats:
        generation_enqueue(generation=generation)
    registry.send_demo_document(user.id, [g.id for g in chats], countdown=DEMO_POLL_S)
    return chats


def demo_chats_writing(chat_ids: list[int]) -> bool:
    """Whether every chat of the scenario has written something (or already ended)."""
    rows = Generation.objects.filter(id__in=chat_ids).select_related("message")
    return all(
        g.status != Generation.Status.QUEUED and (g.status != Generation.Status.RUNNING or g.message.content)
        for g in rows
    )


def demo_document_send(*, user_id: int) -> Generation:
    """The scenario's long document: a report to summarise, from the same user."""
    user = get_user_model().objects.get(id=user_id)
    lines = "\n".join(DEMO_LINE.format(i=i) for i in range(DEMO_DOCUMENT_LINES))
    prompt = f"Summarise this report in one sentence.\n{lines}\nSummary:"
    generation = generation_create_api(user=user, client="demo", prompt=prompt, max_tokens=32)
    generation_enqueue(generation=generation)
    return generation
