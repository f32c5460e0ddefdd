"""Chats that travel: HomeAI's export read back whole, ChatGPT's and Open WebUI's exports read
in order with their branches, and every bad file refused with a sentence and nothing stored."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.test import override_settings

from inference import selectors
from inference.models import Conversation, Generation, Message
from inference.services import transfer
from inference.services.generations import generation_create, generation_edit, generation_regenerate
from infra.errors import ClientError
from tests import factories

EXPORTS = Path(__file__).parent / "exports"


@pytest.fixture
def alice(db):
    return factories.user("alice")


@pytest.fixture
def bob(db):
    return factories.user("bob")


def branched_chat(owner) -> Conversation:
    """A chat with settings, a regenerated answer and an edited message: three branches."""
    first = factories.finish(
        generation_create(
            user=owner,
            conversation_id=None,
            text="Name a fruit.",
            settings={"system_prompt": "Answer in one word.", "temperature": 0.3, "top_p": 0.8, "max_tokens": 12},
        ),
        "Apple.",
    )
    conversation = first.conversation
    factories.finish(generation_regenerate(user=owner, message_id=first.message_id), "Pear.")
    question = first.message.parent
    edited = factories.finish(generation_edit(user=owner, message_id=question.id, text="Name a vegetable."), "Leek.")
    factories.finish(generation_create(user=owner, conversation_id=conversation.id, text="Another?"), "Kale.")
    Generation.objects.filter(id=edited.id).update(notice="A notice kept.", sampling={"temperature": 0.3, "seed": 7})
    conversation.refresh_from_db()
    return conversation


def shape(conversation: Conversation) -> list[tuple]:
    """Every message of every branch, as (depth-first path of roles and texts), with the answers' stats."""
    tree = selectors.MessageTree(conversation.id, with_generations=True)
    rows = []
    for m in tree.messages.values():
        parent = tree.messages.get(m.parent_id)
        generation = getattr(m, "generation", None)
        stats = {name: getattr(generation, name) for name in transfer.GENERATION_FIELDS} if generation else None
        rows.append((m.role, m.content, parent.content if parent else None, tree.siblings(m)["index"], stats))
    return rows


def shown_texts(conversation: Conversation) -> list[tuple[str, str]]:
    return [(turn["role"], turn["text"]) for turn in selectors.conversation_history(conversation=conversation)]


def upload(document) -> bytes:
    return json.dumps(document).encode()


def test_it_round_trips_every_branch_setting_and_stat(alice):
    original = branched_chat(alice)
    document = transfer.chats_export(user=alice, conversation_id=original.id)
    [copy] = transfer.chats_import(user=alice, data=upload(document))

    assert copy.id != original.id and copy.user == alice
    assert copy.title == original.title
    assert (
        copy.settings()
        == original.settings()
        == {
            "model": "",
            "system_prompt": "Answer in one word.",
            "temperature": 0.3,
            "top_p": 0.8,
            "max_tokens": 12,
        }
    )
    assert shape(copy) == shape(original)
    assert len(shape(copy)) == 7  # a question answered twice, its edit answered once, a follow-up answered
    assert (
        shown_texts(copy)
        == shown_texts(original)
        == [
            ("user", "Name a vegetable."),
            ("assistant", "Leek."),
            ("user", "Another?"),
            ("assistant", "Kale."),
        ]
    )
    kept = Generation.objects.get(conversation=copy, message__content="Leek.")
    assert kept.notice == "A notice kept." and kept.sampling == {"temperature": 0.3, "seed": 7}
    assert kept.metrics() == Generation.objects.get(conversation=original, message__content="Leek.").metrics()
    assert copy.created_at == original.created_at
    # A second export of the copy says the same, but for the ids.
    again = transfer.chats_export(user=alice, conversation_id=copy.id)["conversations"][0]
    first = document["conversations"][0]
    strip = lambda c: [{k: v for k, v in m.items() if k not in ("id", "parent")} for m in c["messages"]]  # noqa: E731
    assert strip(again) == strip(first) and again["settings"] == first["settings"]


def test_all_of_a_persons_chats_export_and_nobody_elses(alice, bob):
    branched_chat(alice)
    factories.finished_generation(alice, prompt="Second chat", answer="Yes.")
    factories.finished_generation(bob, prompt="Bob's secret", answer="Hidden.")
    document = transfer.chats_export(user=alice)
    assert document["format"] == "homeai.chats" and document["version"] == 1
    titles = sorted(c["title"] for c in document["conversations"])
    assert titles == ["Name a fruit.", "Second chat"]
    assert "Bob's secret" not in json.dumps(document)
    bobs = Conversation.objects.get(user=bob)
    with pytest.raises(ClientError) as refused:
        transfer.chats_export(user=alice, conversation_id=bobs.id)
    assert refused.value.code == "not_found"


def test_an_import_belongs_to_the_importer_alone(alice, bob):
    document = transfer.chats_export(user=alice, conversation_id=branched_chat(alice).id)
    [copy] = transfer.chats_import(user=bob, data=upload(document))
    assert copy.user == bob
    assert set(Generation.objects.filter(conversation=copy).values_list("user_id", flat=True)) == {bob.id}


def test_the_markdown_is_the_branch_on_show_with_its_versions_named(alice):
    conversation = branched_chat(alice)
    text = transfer.chats_markdown(user=alice, conversation_id=conversation.id)
    assert text.startswith("# Name a fruit.\n\n**System prompt:** Answer in one word.\n")
    assert "## You (version 2 of 2)\n\nName a vegetable." in text
    assert "## Assistant\n\nKale." in text
    assert "Apple." not in text


def test_a_chatgpt_export_imports_with_its_branches_in_order(alice):
    chats = transfer.chats_import(user=alice, data=(EXPORTS / "chatgpt_conversations.json").read_bytes())
    sourdough, packing = chats
    assert sourdough.title == "Sourdough starter help"
    # The branch ChatGPT showed (current_node); the image and the tool's output are left out.
    assert shown_texts(sourdough) == [
        ("user", "My sourdough starter smells like nail polish. Is it dead?"),
        ("assistant", "That smell is acetone from a starving starter. It is alive; feed it more often."),
        ("user", "Here is a photo of it now. How much flour per feed?"),
        ("assistant", "Equal weights: 50 g starter, 50 g flour, 50 g water."),
    ]
    second = Message.objects.get(conversation=sourdough, content__startswith="That smell")
    tree = selectors.MessageTree(sourdough.id)
    assert tree.siblings(second)["index"] == 2 and tree.siblings(second)["count"] == 2
    first = Message.objects.get(id=tree.siblings(second)["ids"][0])
    assert first.content.startswith("Not dead: a smell of acetone")
    assert first.created_at.timestamp() == pytest.approx(1733050009.25)
    assert sourdough.created_at.timestamp() == pytest.approx(1733050000.123456, abs=1e-3)
    assert not Generation.objects.filter(conversation=sourdough).exists()
    # An edited first message: two roots, the beach one on show.
    assert shown_texts(packing) == [
        ("user", "What should I pack for a weekend at the beach?"),
        ("assistant", "Sun cream, a hat, a towel and a good book."),
    ]
    roots = Message.objects.filter(conversation=packing, parent=None).order_by("id")
    assert [m.content for m in roots] == [
        "What should I pack for a weekend in the mountains?",
        "What should I pack for a weekend at the beach?",
    ]


def test_chatgpts_zip_is_read_for_its_conversations_json(alice):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("chat.html", "<html></html>")
        archive.writestr("conversations.json", (EXPORTS / "chatgpt_conversations.json").read_text())
    assert len(transfer.chats_import(user=alice, data=buffer.getvalue())) == 2


def test_an_open_webui_export_imports_with_its_messages_in_order(alice):
    [chat] = transfer.chats_import(user=alice, data=(EXPORTS / "openwebui_export.json").read_bytes())
    assert chat.title == "🌱 Tomato Seedlings Care"
    assert chat.system_prompt == "You are a patient gardening helper."
    assert shown_texts(chat) == [
        ("user", "My tomato seedlings are tall and thin. What am I doing wrong?"),
        ("assistant", "Leggy seedlings need more light and a little less warmth. A fan helps the stems grow strong."),
        ("user", "Should I bury the stems deeper when I repot them?"),
        ("assistant", "Yes. Tomatoes root along a buried stem, so plant them up to the first leaves."),
    ]
    answers = Message.objects.filter(conversation=chat, parent__content__startswith="My tomato").order_by("id")
    assert [a.content[:6] for a in answers] == ["They a", "Leggy "]
    assert chat.updated_at.timestamp() == 1733220107


def test_a_chat_open_webui_itself_exported_imports_with_its_messages_and_versions_in_order(alice):
    # Written by Open WebUI 0.12.4's "Export chat (.json)" over its OpenAI connection to HomeAI
    # (scripts/check-openwebui.sh export): two questions, the second answer regenerated once.
    document = (EXPORTS / "open-webui-0.12.4-chat-export.json").read_bytes()
    history = json.loads(document)[0]["chat"]["history"]
    [chat] = transfer.chats_import(user=alice, data=document)
    assert chat.title == "What is a NAS good for? Answer in one sentence."
    texts = {key: m["content"] for key, m in history["messages"].items()}
    first, answer, second, version_1, version_2 = texts.values()
    assert shown_texts(chat) == [("user", first), ("assistant", answer), ("user", second), ("assistant", version_2)]
    assert history["currentId"] == list(texts)[-1]  # Open WebUI showed the regenerated answer
    versions = Message.objects.filter(conversation=chat, parent__content=second).order_by("id")
    assert [v.content for v in versions] == [version_1, version_2]


@pytest.mark.parametrize(
    ("data", "code", "sentence"),
    [
        (b"\x89PNG\r\n not json", "bad_file", "This file is not JSON"),
        (b'{"hello": "world"}', "bad_file", "not a chat export HomeAI knows"),
        (b"[]", "bad_file", "not a chat export HomeAI knows"),
        (b"PK\x03\x04broken", "bad_file", "This zip file cannot be read."),
    ],
)
def test_a_file_that_is_no_export_is_refused_with_a_sentence(alice, data, code, sentence):
    with pytest.raises(ClientError) as refused:
        transfer.chats_import(user=alice, data=data)
    assert refused.value.code == code and sentence in refused.value.message and refused.value.field == "file"
    assert not Conversation.objects.exists()


def test_an_unknown_role_refuses_the_whole_file_and_stores_nothing(alice):
    document = json.loads((EXPORTS / "openwebui_export.json").read_text())
    good = json.loads(json.dumps(document[0]))
    bad = document[0]
    bad["title"] = "Odd one"
    bad["chat"]["history"]["messages"]["b1f0a2c3-1111-4aaa-8bbb-000000000004"]["role"] = "wizard"
    with pytest.raises(ClientError) as refused:
        transfer.chats_import(user=alice, data=upload([good, bad]))
    assert refused.value.message == (
        'The chat "Odd one" has a message from "wizard"; HomeAI knows only user, assistant and system.'
    )
    assert not Conversation.objects.exists() and not Message.objects.exists()


def test_a_bad_answer_row_late_in_the_file_leaves_nothing_half_imported(alice):
    document = transfer.chats_export(user=alice, conversation_id=branched_chat(alice).id)
    before = (Conversation.objects.count(), Message.objects.count(), Generation.objects.count())
    second = json.loads(json.dumps(document["conversations"][0]))
    second["messages"][-1]["generation"]["output_tokens"] = "many"
    document["conversations"].append(second)
    with pytest.raises(ClientError) as refused:
        transfer.chats_import(user=alice, data=upload(document))
    assert "unreadable output_tokens" in refused.value.message
    assert (Conversation.objects.count(), Message.objects.count(), Generation.objects.count()) == before


def test_a_reply_to_a_missing_message_or_a_loop_is_refused(alice):
    document = transfer.chats_export(user=alice, conversation_id=branched_chat(alice).id)
    messages = document["conversations"][0]["messages"]
    messages[1]["parent"] = 999_999
    with pytest.raises(ClientError, match="answers a message that is not in the file"):
        transfer.chats_import(user=alice, data=upload(document))
    messages[1]["parent"] = messages[2]["id"]
    messages[2]["parent"] = messages[1]["id"]
    with pytest.raises(ClientError, match="in a loop"):
        transfer.chats_import(user=alice, data=upload(document))


def test_an_answer_exported_while_running_comes_back_interrupted(alice):
    generation_create(user=alice, conversation_id=None, text="Still writing?")
    document = transfer.chats_export(user=alice)
    [copy] = transfer.chats_import(user=alice, data=upload(document))
    assert Generation.objects.get(conversation=copy).status == Generation.Status.INTERRUPTED
    assert not Generation.objects.filter(conversation=copy, status__in=Generation.ACTIVE).exists()


@override_settings(HOMEAI_MAX_IMPORT_BYTES=2048)
def test_a_file_past_the_limit_is_refused_before_it_is_read(alice):
    with pytest.raises(ClientError) as refused:
        transfer.chats_import(user=alice, data=b"[" + b" " * 3000 + b"]")
    assert refused.value.code == "too_large"
    assert refused.value.message == "The file is 3,002 bytes; this server imports files of up to 2,048 bytes."


HOSTILE = [
    [{"mapping": {"a": "not a node"}}],
    [{"mapping": {"a": {"message": {"author": {"role": "user"}, "content": {"parts": ["hi"]}}, "parent": ["x"]}}}],
    [{"mapping": {"a": {"message": {"author": "user", "content": {"parts": ["hi"]}}}}}],
    [{"chat": {"history": {"messages": ["a list"]}}}],
    [{"chat": {"history": {"messages": {"a": {"role": {"name": "user"}, "content": "hi"}}}}}],
    [{"chat": {"history": {"messages": {"a": {"role": "user", "content": {"text": "hi"}}}}}}],
    [{"chat": {"history": {"messages": {"a": {"role": "user", "content": "hi", "childrenIds": 3, "parentId": "b"}}}}}],
    {
        "format": "homeai.chats",
        "version": 1,
        "conversations": [{"messages": [{"id": 1, "role": "user", "content": 5}]}],
    },
    {
        "format": "homeai.chats",
        "version": 1,
        "conversations": [{"messages": [{"id": 1, "role": "user"}], "settings": 3}],
    },
    {
        "format": "homeai.chats",
        "version": 1,
        "conversations": [
            {
                "messages": [
                    {
                        "id": 1,
                        "role": "assistant",
                        "generation": {"status": "done", "sampling": {"temperature": 1}, "max_tokens": -4},
                    }
                ]
            }
        ],
    },  # fmt: skip
    {"format": "homeai.chats", "version": 2, "conversations": []},
    {"format": "homeai.chats", "version": 1, "conversations": []},
]


@pytest.mark.parametrize("document", HOSTILE)
def test_a_hostile_shape_gets_a_sentence_never_a_crash(alice, document):
    with pytest.raises(ClientError) as refused:
        transfer.chats_import(user=alice, data=upload(document))
    assert refused.value.field in ("file", "temperature", "top_p", "max_tokens", "system_prompt", "settings")
    assert not Conversation.objects.exists()


def test_json_nested_past_any_export_is_refused_with_a_sentence(alice):
    with pytest.raises(ClientError, match="not a chat export HomeAI knows"):
        transfer.chats_import(user=alice, data=b"[" * 100_000 + b"]" * 100_000)


def test_a_nul_in_a_message_is_dropped_not_a_database_error(alice):
    document = json.loads((EXPORTS / "openwebui_export.json").read_text())
    document[0]["chat"]["history"]["messages"]["b1f0a2c3-1111-4aaa-8bbb-000000000001"]["content"] = "tall\x00 and thin"
    [chat] = transfer.chats_import(user=alice, data=upload(document))
    assert Message.objects.get(conversation=chat, parent=None).content == "tall and thin"


def test_a_damaged_zip_member_gets_a_sentence(alice):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", (EXPORTS / "chatgpt_conversations.json").read_text())
    data = bytearray(buffer.getvalue())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\xff" * 64  # the compressed stream, broken
    with pytest.raises(ClientError, match="This zip file cannot be read."):
        transfer.chats_import(user=alice, data=bytes(data))
