"""Writes for a whole conversation: rename it, show another branch, change its settings."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext, gettext_lazy

from inference import selectors
from inference.models import Conversation, Generation, Message
from inference.services.validation import validate_settings, validate_title
from infra.errors import ClientError

BUSY_MESSAGE = gettext_lazy("An answer is still being written in this conversation: wait for it or press Stop.")


def own_conversation(*, user, conversation_id) -> Conversation:
    conversation = selectors.conversation_for_user(user=user, conversation_id=conversation_id)
    if conversation is None:
        raise ClientError("not_found", gettext("That conversation does not exist."), field="conversation")
    return conversation


def own_message(*, user, message_id) -> Message:
    message = selectors.message_for_user(user=user, message_id=message_id)
    if message is None:
        raise ClientError("not_found", gettext("That message does not exist."), field="message")
    return message


def conversation_idle(*, user, conversation_id) -> Conversation:
    """The user's conversation, refused while one of its answers is queued or running."""
    conversation = own_conversation(user=user, conversation_id=conversation_id)
    if conversation.generations.filter(status__in=Generation.ACTIVE).exists():
        raise ClientError("busy", str(BUSY_MESSAGE))
    return conversation


def conversation_rename(*, user, conversation_id, title) -> Conversation:
    title = validate_title(title)
    conversation = own_conversation(user=user, conversation_id=conversation_id)
    conversation.title = title
    conversation.save(update_fields=["title"])  # not updated_at: a new name does not move it up the list
    return conversation


def conversation_switch(*, user, message_id) -> Conversation:
    """Show the branch through message_id: down to the newest message below it."""
    message = own_message(user=user, message_id=message_id)
    with transaction.atomic():
        conversation = conversation_idle(user=user, conversation_id=message.conversation_id)
        conversation.current_leaf_id = selectors.MessageTree(conversation.id).newest_below(message.id)
        conversation.save(update_fields=["current_leaf"])  # looking back does not move it up the list
    return conversation


def settings_changes(*, user, settings, preset) -> dict:
    """The settings a request changes, checked: a preset's (a built-in's key or the id of one
    of the user's own), then the explicit ones over it."""
    changes = {}
    if preset is not None:
        held = selectors.preset_settings(user=user, preset=preset)
        if held is None:
            raise ClientError("not_found", gettext("That preset does not exist."), field="preset")
        changes.update(held)
    changes.update(validate_settings(settings))
    return changes


def conversation_settings_update(*, user, conversation_id, settings=None, preset=None) -> Conversation:
    """Change the settings the conversation's next answers use (an answer already asked for
    keeps the ones it was asked with)."""
    changes = settings_changes(user=user, settings=settings, preset=preset)
    conversation = own_conversation(user=user, conversation_id=conversation_id)
    for name, value in changes.items():
        setattr(conversation, name, value)
    conversation.save(update_fields=list(changes))
    return conversation
