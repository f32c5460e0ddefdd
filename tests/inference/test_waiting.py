"""The line of waiting answers is shared: a person (or a script's key) holds only a share of it."""

from __future__ import annotations

import pytest

from inference.services.generations import generation_create, generation_create_api
from infra.errors import ClientError
from tests import factories


def test_one_person_cannot_take_every_place_in_the_line(db, settings):
    settings.HOMEAI_MAX_WAITING, settings.HOMEAI_MAX_WAITING_PER_USER = 10, 2
    script, neighbour = factories.user("script"), factories.user("neighbour")
    for _ in range(2):
        generation_create_api(user=script, client="loop", prompt="again", max_tokens=4)
    with pytest.raises(ClientError) as caught:
        generation_create_api(user=script, client="loop", prompt="again", max_tokens=4)
    assert caught.value.code == "busy" and "You already have 2 answers waiting" in caught.value.message
    assert generation_create(user=neighbour, conversation_id=None, text="My turn?", max_tokens=4)


def test_the_whole_line_still_has_its_limit(db, settings):
    settings.HOMEAI_MAX_WAITING, settings.HOMEAI_MAX_WAITING_PER_USER = 2, 8
    for name in ("a", "b"):
        generation_create(user=factories.user(name), conversation_id=None, text="Hi", max_tokens=4)
    with pytest.raises(ClientError, match="The server is busy: 2 answers are already waiting"):
        generation_create(user=factories.user("c"), conversation_id=None, text="Hi", max_tokens=4)
