"""Writes for a shared chat: share a conversation read-only with named people in the house or
with everyone signed in, change who, and revoke the link."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.translation import gettext

from inference.models import ChatShare
from inference.services.conversations import own_conversation
from infra.errors import ClientError


def _people(*, user, people) -> list:
    """The people named (user ids), each an active account other than the owner's."""
    if people is None:
        return []
    if not isinstance(people, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in people):
        raise ClientError("bad_request", gettext("Name the people to share with by their ids."), field="people")
    found = list(get_user_model().objects.filter(id__in=set(people), is_active=True).exclude(id=user.id))
    if len(found) != len(set(people) - {user.id}):
        raise ClientError("not_found", gettext("One of those people has no account here."), field="people")
    return found


def conversation_share(*, user, conversation_id, everyone=False, people=None) -> ChatShare:
    """Share the conversation read-only (a new link if it had none), with everyone signed in or
    with the people named; sharing again changes who, and keeps the link."""
    if not isinstance(everyone, bool):
        raise ClientError("bad_request", gettext("everyone must be true or false."), field="everyone")
    chosen = _people(user=user, people=people)
    if not everyone and not chosen:
        raise ClientError(
            "bad_request", gettext("Choose the people to share with, or everyone signed in."), field="people"
        )
    with transaction.atomic():
        conversation = own_conversation(user=user, conversation_id=conversation_id)
        share, _ = ChatShare.objects.get_or_create(
            conversation=conversation, defaults={"token": secrets.token_urlsafe(32)}
        )
        share.everyone = everyone
        share.save(update_fields=["everyone"])
        share.people.set(chosen)
    return share


def conversation_unshare(*, user, conversation_id) -> None:
    """Revoke the conversation's link: nobody else reads it any more, and a new share is a new link."""
    conversation = own_conversation(user=user, conversation_id=conversation_id)
    ChatShare.objects.filter(conversation=conversation).delete()
