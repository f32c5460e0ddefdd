"""Branches, the prompt's path, chat settings, presets, search and ownership: the services and
selectors on the database alone (no worker: answers are finished by tests.factories.finish)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection

from dashboard.latency import payload
from inference import selectors
from inference.models import Conversation, Generation, Message, Preset
from inference.services import conversations, presets
from inference.services.generations import (
    generation_create,
    generation_create_api,
    generation_edit,
    generation_regenerate,
)
from infra.errors import ClientError
from tests import factories

link_messages = importlib.import_module("inference.migrations.0006_chat_branches_and_settings").link_messages


def refused(fn, **kwargs) -> ClientError:
    with pytest.raises(ClientError) as caught:
        fn(**kwargs)
    return caught.value


def texts(history: list[dict]) -> list[str]:
    return [turn["text"] for turn in history]


def shown(conversation_id: int) -> list[dict]:
    return selectors.conversation_history(conversation=Conversation.objects.get(id=conversation_id))


@pytest.fixture
def alice(db):
    return factories.user("alice")


@pytest.fixture
def bob(db):
    return factories.user("bob")


def say(user, text, conversation=None, answer=None, **kwargs) -> Generation:
    """A message and its finished answer."""
    generation = generation_create(user=user, conversation_id=conversation, text=text, **kwargs)
    return factories.finish(generation, answer if answer is not None else f"re: {text}")


@pytest.fixture
def chat(alice):
    """Alice's two-turn chat: u1 a1 u2 a2."""
    first = say(alice, "u1", answer="a1")
    second = say(alice, "u2", conversation=first.conversation_id, answer="a2")
    return first, second


def test_messages_chain_through_their_parents_and_the_prompt_follows_the_chain(chat):
    first, second = chat
    u1, a1 = first.message.parent, first.message
    u2, a2 = second.message.parent, second.message
    assert (u1.parent_id, a1.parent_id, u2.parent_id, a2.parent_id) == (None, u1.id, a1.id, u2.id)
    assert Conversation.objects.get(id=first.conversation_id).current_leaf_id == a2.id
    assert selectors.prompt_messages(generation=second) == [
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},
    ]
    history = shown(first.conversation_id)
    assert [(t["id"], t["role"], t["text"]) for t in history] == [
        (u1.id, "user", "u1"),
        (a1.id, "assistant", "a1"),
        (u2.id, "user", "u2"),
        (a2.id, "assistant", "a2"),
    ]
    assert all(t["siblings"] == {"index": 1, "count": 1, "ids": [t["id"]]} for t in history)
    assert history[1]["generation"]["id"] == first.id and history[0]["generation"] is None


def test_regenerate_adds_a_sibling_answer_and_both_stay_switchable(alice, chat):
    first, second = chat
    a1 = first.message
    again = factories.finish(generation_regenerate(user=alice, message_id=a1.id), "a1 again")
    assert again.message.parent_id == a1.parent_id
    # Its prompt ends at the question it answers: no later turn, no earlier answer.
    assert selectors.prompt_messages(generation=again) == [{"role": "user", "content": "u1"}]
    history = shown(first.conversation_id)
    assert texts(history) == ["u1", "a1 again"]
    assert history[1]["siblings"] == {"index": 2, "count": 2, "ids": [a1.id, again.message_id]}

    # From the user's message too: a third answer.
    third = factories.finish(generation_regenerate(user=alice, message_id=a1.parent_id), "a1 third")
    assert shown(first.conversation_id)[1]["siblings"]["count"] == 3

    # Back to the first answer: its branch shows down to its newest message (a2).
    conversations.conversation_switch(user=alice, message_id=a1.id)
    history = shown(first.conversation_id)
    assert texts(history) == ["u1", "a1", "u2", "a2"]
    assert history[1]["siblings"] == {"index": 1, "count": 3, "ids": [a1.id, again.message_id, third.message_id]}
    # A new message continues the branch on show.
    follow_up = say(alice, "u3", conversation=first.conversation_id)
    assert follow_up.message.parent.parent_id == second.message_id


def test_edit_makes_a_sibling_message_with_a_new_answer_and_the_prompt_has_only_the_edit(alice, chat):
    first, second = chat
    u2 = second.message.parent
    edited = factories.finish(generation_edit(user=alice, message_id=u2.id, text="u2 edited"), "a2 edited")
    new_u2 = edited.message.parent
    assert new_u2.parent_id == u2.parent_id and new_u2.content == "u2 edited"
    prompt = selectors.prompt_messages(generation=edited)
    assert prompt[-1] == {"role": "user", "content": "u2 edited"}
    assert "u2" not in [m["content"] for m in prompt]
    history = shown(first.conversation_id)
    assert texts(history) == ["u1", "a1", "u2 edited", "a2 edited"]
    assert history[2]["siblings"] == {"index": 2, "count": 2, "ids": [u2.id, new_u2.id]}

    # The first message can be edited too: a second root.
    root = factories.finish(generation_edit(user=alice, message_id=first.message.parent_id, text="u1 edited"))
    assert root.message.parent.parent_id is None
    assert texts(shown(first.conversation_id))[0] == "u1 edited"
    assert shown(first.conversation_id)[0]["siblings"]["count"] == 2

    conversations.conversation_switch(user=alice, message_id=u2.id)
    assert texts(shown(first.conversation_id)) == ["u1", "a1", "u2", "a2"]


def test_an_assistant_or_system_message_cannot_be_edited_and_a_system_message_not_regenerated(alice, chat):
    first, _ = chat
    error = refused(generation_edit, user=alice, message_id=first.message_id, text="mine now")
    assert error.code == "bad_request" and error.field == "message"
    api = generation_create_api(
        user=alice, client="x", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    )
    system = api.message.parent.parent
    assert system.role == "system"
    assert refused(generation_regenerate, user=alice, message_id=system.id).field == "message"


def test_regenerate_edit_and_switch_wait_for_the_answer_being_written(alice, chat):
    first, second = chat
    running = generation_create(user=alice, conversation_id=first.conversation_id, text="u3")
    for fn, kwargs in [
        (generation_regenerate, {"message_id": first.message_id}),
        (generation_edit, {"message_id": first.message.parent_id, "text": "x"}),
        (conversations.conversation_switch, {"message_id": first.message_id}),
    ]:
        assert refused(fn, user=alice, **kwargs).code == "busy"
    factories.finish(running)
    assert Message.objects.filter(conversation_id=first.conversation_id).count() == 6  # nothing half-made


def test_no_one_touches_another_persons_conversation(alice, bob, chat):
    first, _ = chat
    message_id, conversation_id = first.message_id, first.conversation_id
    for fn, kwargs in [
        (generation_regenerate, {"message_id": message_id}),
        (generation_edit, {"message_id": first.message.parent_id, "text": "x"}),
        (conversations.conversation_switch, {"message_id": message_id}),
        (conversations.conversation_rename, {"conversation_id": conversation_id, "title": "mine"}),
        (conversations.conversation_settings_update, {"conversation_id": conversation_id, "settings": {}}),
        (generation_create, {"conversation_id": conversation_id, "text": "x"}),
    ]:
        assert refused(fn, user=bob, **kwargs).code == "not_found", fn.__name__
    for bad in (None, "1", True, 10**9, 1.0):
        assert refused(generation_regenerate, user=alice, message_id=bad).code == "not_found"
    assert selectors.conversation_search(user=bob, query="u1") == []
    assert Message.objects.filter(conversation_id=conversation_id).count() == 4


def test_a_conversations_settings_reach_its_answers(alice):
    values = {"system_prompt": "  You are a pirate.  ", "temperature": 0.3, "top_p": 0.8, "max_tokens": 12}
    generation = generation_create(user=alice, conversation_id=None, text="Hi", settings=values)
    conversation = generation.conversation
    assert conversation.settings() == {**values, "model": "", "system_prompt": "You are a pirate."}
    assert generation.sampling == {"temperature": 0.3, "top_p": 0.8}
    assert generation.max_tokens == 12 and generation.system_prompt == "You are a pirate."
    assert selectors.prompt_messages(generation=generation) == [
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "Hi"},
    ]
    factories.finish(generation)

    # The answer's own max_tokens and options win over the conversation's.
    own = generation_create(
        user=alice, conversation_id=conversation.id, text="More", max_tokens=5, options={"temperature": 0, "seed": 3}
    )
    assert own.max_tokens == 5 and own.sampling == {"temperature": 0.0, "top_p": 0.8, "seed": 3}
    factories.finish(own)

    # A preset changes what it holds; null goes back to the server's default.
    conversations.conversation_settings_update(
        user=alice, conversation_id=conversation.id, preset="creative", settings={"max_tokens": None}
    )
    conversation.refresh_from_db()
    assert conversation.settings() == {
        "model": "",
        "system_prompt": "You are a pirate.",
        "temperature": 1.0,
        "top_p": 0.98,
        "max_tokens": None,
    }
    regenerated = generation_regenerate(user=alice, message_id=own.message_id)
    assert regenerated.sampling == {"temperature": 1.0, "top_p": 0.98}
    assert regenerated.max_tokens == settings.HOMEAI_MAX_TOKENS
    factories.finish(regenerated)


def test_settings_are_checked_and_each_refusal_names_its_field(alice):
    cases = [
        ({"system_prompt": "x" * 4001}, "too_long", "system_prompt", "4,001 characters; the limit is 4,000"),
        ({"system_prompt": 7}, "bad_request", "system_prompt", "The system prompt must be a string"),
        ({"temperature": 9}, "bad_request", "temperature", "temperature must be a number from 0.0 to 5.0"),
        ({"top_p": "high"}, "bad_request", "top_p", "top_p must be a number from 0.0 to 1.0"),
        ({"max_tokens": 0}, "bad_request", "max_tokens", "max_tokens must be a whole number"),
        ({"warmth": 1}, "bad_request", "warmth", "Unknown setting 'warmth'"),
        ("hot", "bad_request", "settings", "settings must be an object"),
    ]
    for values, code, field, words in cases:
        error = refused(generation_create, user=alice, conversation_id=None, text="hi", settings=values)
        assert (error.code, error.field) == (code, field) and words in error.message, values
    error = refused(generation_create, user=alice, conversation_id=None, text="hi", preset="spicy")
    assert (error.code, error.field) == ("not_found", "preset")
    assert not Conversation.objects.exists()  # nothing stored for a refused message


def test_presets_built_in_and_a_persons_own(alice, bob):
    mine = presets.preset_create(
        user=alice, name="  Short   answers ", settings={"system_prompt": "Be brief.", "max_tokens": 64}
    )
    assert mine.name == "Short answers"
    listed = selectors.preset_list(user=alice)
    assert [p["id"] for p in listed] == ["precise", "balanced", "creative", mine.id]
    assert listed[0] == {
        "id": "precise",
        "name": "Precise",
        "builtin": True,
        "settings": {"temperature": 0.2, "top_p": 0.9},
    }
    assert listed[3]["settings"] == {
        "model": "",
        "system_prompt": "Be brief.",
        "temperature": None,
        "top_p": None,
        "max_tokens": 64,
    }
    assert len(selectors.preset_list(user=bob)) == 3

    generation = generation_create(user=alice, conversation_id=None, text="Hi", preset=mine.id)
    assert generation.system_prompt == "Be brief." and generation.max_tokens == 64 and generation.sampling == {}
    assert refused(generation_create, user=bob, conversation_id=None, text="Hi", preset=mine.id).code == "not_found"

    for name, field in [("short ANSWERS", "name"), ("balanced", "name"), ("", "name"), ("x" * 61, "name")]:
        assert refused(presets.preset_create, user=alice, name=name, settings={}).field == field, name
    assert refused(presets.preset_create, user=alice, name="Hot", settings={"temperature": 6}).field == "temperature"
    assert refused(presets.preset_delete, user=bob, preset_id=mine.id).code == "not_found"
    presets.preset_delete(user=alice, preset_id=mine.id)
    assert not Preset.objects.exists()


def test_rename_checks_the_title(alice, chat):
    first, _ = chat
    renamed = conversations.conversation_rename(
        user=alice, conversation_id=first.conversation_id, title=" A\n new  name "
    )
    assert renamed.title == "A new name"
    for bad, code in [("  ", "bad_request"), (None, "bad_request"), ("x" * 121, "too_long")]:
        error = refused(conversations.conversation_rename, user=alice, conversation_id=first.conversation_id, title=bad)
        assert (error.code, error.field) == (code, "title")


def test_search_finds_titles_and_message_text_in_any_case_only_in_ones_own_chats(alice, bob, chat):
    first, _ = chat
    other = say(alice, "Recipes for a LEMON tart, with a long story before the ingredients " + "la " * 60)
    conversations.conversation_rename(user=alice, conversation_id=first.conversation_id, title="Lemon ideas")
    say(bob, "lemon for bob")
    generation_create_api(user=alice, client="x", prompt="lemon through the API")

    found = selectors.conversation_search(user=alice, query="lemon")
    assert [r["id"] for r in found] == [other.conversation_id, first.conversation_id]
    assert found[0]["snippet"].startswith("Recipes for a LEMON tart") and found[0]["snippet"].endswith("…")
    assert found[1]["snippet"] == "" and found[1]["title"] == "Lemon ideas"
    assert set(found[0]) == {"id", "title", "snippet", "updated_at"}
    assert selectors.conversation_search(user=alice, query="") == []
    assert selectors.snippet("a" * 100 + "needle" + "b" * 100, "NEEDLE").startswith("…" + "a" * 40 + "needle")


def test_search_returns_at_most_fifty(alice):
    for i in range(52):
        Conversation.objects.create(user=alice, title=f"topic {i}")
    assert len(selectors.conversation_search(user=alice, query="TOPIC")) == 50


def test_the_request_detail_shows_the_system_prompt_and_the_turn_the_answer_replies_to(alice, bob, chat):
    first, _ = chat
    conversations.conversation_settings_update(
        user=alice, conversation_id=first.conversation_id, settings={"system_prompt": "Speak French."}
    )
    again = factories.finish(generation_regenerate(user=alice, message_id=first.message_id))
    detail = payload.generation_detail(viewer=alice, generation_id=again.id)
    # The prompt is u1 (its parent), not u2, the newer message of the other branch.
    assert detail["system_prompt"] == "Speak French." and detail["prompt"] == "u1"
    assert payload.generation_detail(viewer=bob, generation_id=again.id)["system_prompt"] is None
    assert payload.generation_detail(viewer=alice, generation_id=first.id)["system_prompt"] == ""


def test_api_conversations_are_one_chain_with_their_system_message(alice):
    turns = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Again"},
    ]
    generation = generation_create_api(user=alice, client="x", messages=turns)
    assert selectors.prompt_messages(generation=generation) == turns
    detail = payload.generation_detail(viewer=alice, generation_id=generation.id)
    assert detail["system_prompt"] == "Be brief." and detail["prompt"] == "Again"


def test_the_migration_links_old_messages_into_one_branch(alice, chat):
    first, second = chat
    lone = say(alice, "alone")
    Message.objects.update(parent=None)
    Conversation.objects.update(current_leaf=None)
    link_messages(apps, SimpleNamespace(connection=connection))  # of its schema editor, it reads the database
    assert selectors.prompt_messages(generation=second) == [
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},
    ]
    assert texts(shown(first.conversation_id)) == ["u1", "a1", "u2", "a2"]
    assert Conversation.objects.get(id=lone.conversation_id).current_leaf_id == lone.message_id
    assert Message.objects.get(id=lone.message.parent_id).parent_id is None


def test_a_chat_picks_its_model_by_any_of_its_names_and_an_unknown_one_is_refused_by_name(alice):
    chat_model = settings.BUNDLED_CHAT_MODEL_PATH.name
    base_model = settings.BUNDLED_BASE_MODEL_PATH.name
    generation = generation_create(user=alice, conversation_id=None, text="Hi", settings={"model": "gemma3:270m"})
    assert generation.conversation.model == base_model and generation.model_name == base_model
    factories.finish(generation)
    conversations.conversation_settings_update(
        user=alice, conversation_id=generation.conversation_id, settings={"model": "smollm2"}
    )
    again = generation_create(user=alice, conversation_id=generation.conversation_id, text="And?")
    assert again.model_name == chat_model  # Ollama's family name alone: its ":latest"
    factories.finish(again)
    with pytest.raises(ClientError) as refused:
        conversations.conversation_settings_update(
            user=alice, conversation_id=generation.conversation_id, settings={"model": "llama9:70b"}
        )
    assert refused.value.code == "model_not_found" and refused.value.field == "model"
    assert "llama9:70b" in refused.value.message and "smollm2:135m" in refused.value.message
    # Empty is the server's default again.
    conversations.conversation_settings_update(
        user=alice, conversation_id=generation.conversation_id, settings={"model": None}
    )
    default = generation_create(user=alice, conversation_id=generation.conversation_id, text="Hm")
    assert default.model_name == settings.HOMEAI_MODEL_PATH.name
    factories.finish(default)


def test_a_chat_cannot_pick_an_embedding_model(alice):
    with pytest.raises(ClientError) as refused:
        generation_create(user=alice, conversation_id=None, text="Hi", settings={"model": "all-minilm"})
    assert refused.value.code == "embedding_model" and refused.value.field == "model"
    assert "all-minilm is an embedding model" in refused.value.message
    assert not Conversation.objects.exists()
