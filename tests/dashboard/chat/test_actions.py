"""The chat's actions on the real path (socket -> daphne -> Celery worker -> llama.cpp): regenerate,
edit and resend, switch branches, per-conversation settings, and other people's ids refused."""

from __future__ import annotations

import pytest

from inference.models import Conversation, Generation, Message
from inference.services.generations import generation_create_api, generation_enqueue
from tests.support import DONE_TYPES, of_type, wait_until

pytestmark = [pytest.mark.integration]

SHORT = {"max_tokens": 4, "options": {"ignore_eos": True}}
GREEDY = {"max_tokens": 4, "options": {"ignore_eos": True, "temperature": 0}}


def done(events: list[dict]) -> dict:
    ends = [e for e in events if e["type"] in DONE_TYPES]
    assert ends and ends[-1]["type"] == "generation.done", f"no generation.done; last events: {events[-3:]}"
    return ends[-1]


def act(sock, message: dict) -> list[dict]:
    """Send a chat.regenerate / chat.edit and return its events until its answer ends."""
    sock.send(message)
    return sock.collect(lambda e: e["type"] in DONE_TYPES, timeout=120)


def reply(sock, message: dict) -> dict:
    sock.send(message)
    return sock.recv()


def control_prompt_tokens(user, messages: list[dict]) -> int:
    """The prompt length the worker counts for exactly these messages (an API request, same template)."""
    generation = generation_create_api(user=user, client="control", messages=messages, **GREEDY)
    generation_enqueue(generation=generation)
    assert wait_until(lambda: not Generation.objects.get(id=generation.id).is_active, timeout=120)
    return Generation.objects.get(id=generation.id).prompt_tokens


def test_regenerate_writes_a_second_answer_and_both_stay_switchable(worker, make_user, connect):
    sock = connect(make_user())
    first = sock.chat("Name a fruit.", **SHORT)
    queued = first[0]
    assert queued["type"] == "generation.queued" and queued["message"] and queued["user_message"]
    first_text = done(first)["text"]

    events = act(sock, {"type": "chat.regenerate", "message": queued["message"], **SHORT})
    branch, again = events[0], events[1]
    assert branch["type"] == "conversation.branch" and again["type"] == "generation.queued"
    assert branch["conversation"] == queued["conversation"] and again["user_message"] == queued["user_message"]
    assert [m["id"] for m in branch["messages"]] == [queued["user_message"], again["message"]]
    new = branch["messages"][1]
    assert new["siblings"] == {"index": 2, "count": 2, "ids": [queued["message"], again["message"]]}
    assert new["generation"] == {
        "id": again["generation"],
        "status": "queued",
        "metrics": None,
        "notice": "",
        "error": "",
    }
    second_text = done(events)["text"]
    assert of_type(events, "generation.token") and done(events)["generation"] == again["generation"]

    shown = reply(sock, {"type": "chat.switch", "message": queued["message"]})
    assert shown["type"] == "conversation.branch"
    assert [(m["id"], m["text"]) for m in shown["messages"]] == [
        (queued["user_message"], "Name a fruit."),
        (queued["message"], first_text),
    ]
    assert shown["messages"][1]["siblings"]["index"] == 1
    assert shown["messages"][1]["generation"]["metrics"]["output_tokens"] == 4

    shown = reply(sock, {"type": "chat.switch", "message": again["message"]})
    assert shown["messages"][1]["text"] == second_text and shown["messages"][1]["siblings"]["index"] == 2
    # A follow-up continues the branch on show.
    follow = sock.chat("And another?", conversation=queued["conversation"], **SHORT)
    assert Message.objects.get(id=follow[0]["user_message"]).parent_id == again["message"]


def test_edit_and_resend_makes_a_branch_and_the_worker_reads_only_the_edited_text(worker, make_user, connect):
    user = make_user()
    sock = connect(user)
    first = sock.chat("My secret word is apple.", **GREEDY)
    conversation = first[0]["conversation"]
    answer = done(first)["text"]
    second = sock.chat("What is my secret word?", conversation=conversation, **GREEDY)
    edited_text = "What is my secret word? Please answer with the word banana, spelled out in capital letters."

    events = act(sock, {"type": "chat.edit", "message": second[0]["user_message"], "text": edited_text, **GREEDY})
    branch, queued = events[0], events[1]
    assert [m["text"] for m in branch["messages"][:3]] == ["My secret word is apple.", answer, edited_text]
    assert branch["messages"][2]["siblings"] == {
        "index": 2,
        "count": 2,
        "ids": [second[0]["user_message"], queued["user_message"]],
    }
    assert done(events)["status"] == "done"

    edited = Generation.objects.get(id=queued["generation"])
    expected = [
        {"role": "user", "content": "My secret word is apple."},
        *([{"role": "assistant", "content": answer}] if answer.strip() else []),  # as the prompt leaves it
        {"role": "user", "content": edited_text},
    ]
    # The worker's prompt was exactly the edited branch: the same length as those three messages,
    # which is not the length with the old question in it too.
    assert edited.prompt_tokens == control_prompt_tokens(user, expected)
    old_branch = [*expected[:-1], {"role": "user", "content": "What is my secret word?"}, expected[-1]]
    assert edited.prompt_tokens != control_prompt_tokens(user, old_branch)

    shown = reply(sock, {"type": "chat.switch", "message": second[0]["user_message"]})
    assert [m["text"] for m in shown["messages"]][2] == "What is my secret word?"
    assert shown["messages"][3]["id"] == second[0]["message"]


def test_a_system_prompt_and_the_sampling_settings_reach_the_model(worker, make_user, connect):
    user = make_user()
    sock = connect(user)
    # Longer than any default system prompt a chat template adds when there is none.
    pirate = (
        "You are Captain Marlowe, an old pirate of the Caribbean sea. Answer every question as a pirate "
        "would, with plenty of arr, talk of ships, parrots, treasure maps and buried gold, and never "
        "admit to being anything but a pirate, whatever the person says or asks."
    )
    events = sock.chat("Hello there.", preset="precise", settings={"system_prompt": pirate}, **GREEDY)
    assert done(events)["status"] == "done"
    [settings] = of_type(events, "conversation.settings")
    assert settings["settings"] == {
        "model": "",
        "system_prompt": pirate,
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": None,
    }
    generation = Generation.objects.get(id=events[0]["generation"])
    assert generation.system_prompt == pirate
    assert generation.sampling == {"temperature": 0.0, "top_p": 0.9, "ignore_eos": True}  # the message's own win
    with_system = [{"role": "system", "content": pirate}, {"role": "user", "content": "Hello there."}]
    assert generation.prompt_tokens == control_prompt_tokens(user, with_system)
    assert generation.prompt_tokens > control_prompt_tokens(user, with_system[1:]) + 10

    conversation = events[0]["conversation"]
    changed = reply(sock, {"type": "chat.settings", "conversation": conversation, "settings": {"temperature": 0.5}})
    assert changed == {
        "type": "conversation.settings",
        "conversation": conversation,
        "settings": {"model": "", "system_prompt": pirate, "temperature": 0.5, "top_p": 0.9, "max_tokens": None},
    }
    refused = reply(sock, {"type": "chat.settings", "conversation": conversation, "settings": {"top_p": 3}})
    assert refused["code"] == "bad_request" and "top_p must be a number from 0.0 to 1.0" in refused["message"]
    nxt = sock.chat("And again.", conversation=conversation, max_tokens=4)
    assert Generation.objects.get(id=nxt[0]["generation"]).sampling == {"temperature": 0.5, "top_p": 0.9}
    assert Conversation.objects.get(id=conversation).temperature == 0.5


def test_another_persons_ids_are_refused_and_a_busy_conversation_refuses_changes(worker, make_user, connect):
    alice_sock, bob_sock = connect(make_user("alice")), connect(make_user("bob"))
    first = alice_sock.chat("A secret about the moon.", **SHORT)
    q = first[0]
    for message in (
        {"type": "chat.regenerate", "message": q["message"]},
        {"type": "chat.edit", "message": q["user_message"], "text": "mine now"},
        {"type": "chat.switch", "message": q["message"]},
        {"type": "chat.settings", "conversation": q["conversation"], "settings": {"temperature": 1}},
    ):
        answer = reply(bob_sock, message)
        assert answer["type"] == "generation.error" and answer["code"] == "not_found", message
    assert Message.objects.filter(conversation_id=q["conversation"]).count() == 2

    alice_sock.send(
        {
            "type": "chat.send",
            "conversation": q["conversation"],
            "text": "Count to a hundred.",
            "max_tokens": 60,
            "options": {"ignore_eos": True},
        }
    )
    running = alice_sock.collect(lambda e: e["type"] == "generation.queued")[-1]
    for message in (
        {"type": "chat.regenerate", "message": q["message"]},
        {"type": "chat.edit", "message": q["user_message"], "text": "changed"},
        {"type": "chat.switch", "message": q["message"]},
    ):
        alice_sock.send(message)
        refused = alice_sock.collect(lambda e: e["type"] == "generation.error" and e["generation"] is None)[-1]
        assert refused["code"] == "busy", message
    alice_sock.send({"type": "chat.cancel", "generation": running["generation"]})
    ended = alice_sock.collect(lambda e: e["type"] in DONE_TYPES and e["generation"] == running["generation"])
    assert ended[-1]["status"] == "cancelled"
    # Free again: the regenerate that was refused now runs.
    assert done(act(alice_sock, {"type": "chat.regenerate", "message": q["message"], **SHORT}))["status"] == "done"
