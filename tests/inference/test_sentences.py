"""Sentences cut from streamed text for reading aloud: each one as soon as it is complete, never
at an abbreviation, a number or a list's marker, in the UI's three languages."""

from __future__ import annotations

import pytest

from inference.sentences import SentenceCutter, cut, speakable


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Hello Dr. Smith, how are you? I am fine.", ["Hello Dr. Smith, how are you?", "I am fine."]),
        (
            "Mr. and Mrs. Jones met at 5 p.m. today. It rained.",
            ["Mr. and Mrs. Jones met at 5 p.m. today.", "It rained."],
        ),
        ("Use e.g. salt, i.e. sodium. Done!", ["Use e.g. salt, i.e. sodium.", "Done!"]),
        ("Pi is 3.14159 and e is 2.718. Both are numbers.", ["Pi is 3.14159 and e is 2.718.", "Both are numbers."]),
        ("It costs $1,250.50 in total. Cheap.", ["It costs $1,250.50 in total.", "Cheap."]),
        ("J. R. R. Tolkien wrote it. Read it.", ["J. R. R. Tolkien wrote it.", "Read it."]),
        ("You need:\n1. Flour\n2. Eggs\n\nMix them.", ["You need:", "Flour", "Eggs", "Mix them."]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("**Bold.** Then `code` here.", ["Bold.", "Then code here."]),
        ("Wait... what?! Really.", ["Wait...", "what?!", "Really."]),
        # Korean: the same marks, with or without the spaces after them.
        (
            "안녕하세요. 오늘 날씨가 좋네요! 무엇을 도와드릴까요?",
            ["안녕하세요.", "오늘 날씨가 좋네요!", "무엇을 도와드릴까요?"],
        ),
        ("가격은 3.5달러입니다. 감사합니다.", ["가격은 3.5달러입니다.", "감사합니다."]),
        # Portuguese: its own titles and abbreviations, and its number formats.
        ("Olá, Sra. Silva! O preço é R$ 3,50. Tudo bem?", ["Olá, Sra. Silva!", "O preço é R$ 3,50.", "Tudo bem?"]),
        (
            "A Dra. Souza e o Prof. Lima chegaram. Veja p.ex. a pág. 3.",
            ["A Dra. Souza e o Prof. Lima chegaram.", "Veja p.ex. a pág. 3."],
        ),
        # Full-width marks need no space after them.
        ("東京は大きい。とても", ["東京は大きい。", "とても"]),
    ],
)
def test_cut(text, sentences):
    assert cut(text) == sentences


def test_a_sentence_comes_out_once_the_next_begins():
    cutter = SentenceCutter()
    assert cutter.feed("Hello") == []
    assert cutter.feed(" there.") == []  # its end is certain only once the next word comes
    assert cutter.feed(" How") == ["Hello there."]
    assert cutter.feed(" are you?") == []
    assert cutter.feed("\n") == ["How are you?"]
    assert cutter.feed("Fine") == []
    assert cutter.flush() == ["Fine"]
    assert cutter.flush() == []


def test_pieces_split_anywhere_give_the_same_sentences():
    text = "Dr. Who arrived at 3.30 p.m. on Monday. 안녕하세요. Olá, Sr. Costa! 1. One\n2. Two"
    whole = cut(text)
    for size in (1, 2, 3, 7):
        cutter = SentenceCutter()
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        got = [s for piece in pieces for s in cutter.feed(piece)] + cutter.flush()
        assert got == whole


def test_speakable_drops_markup_and_list_markers():
    assert speakable("## Title\n- **one** item\n> quoted | cell") == "Title one item quoted cell"


def test_a_long_sentence_is_read_in_parts_cut_after_its_clauses():
    text = "The sea covers about seventy-one percent of the Earth, and it holds most of its water; it is vast."
    assert cut(text) == [
        "The sea covers about seventy-one percent of the Earth,",
        "and it holds most of its water; it is vast.",
    ]
    assert cut("Hello Dr. Smith, how are you?") == ["Hello Dr. Smith, how are you?"]  # short: whole
    numbers = "The winning numbers this week were drawn on Saturday: 4, 8, 15, 16, 23 and 42."
    assert cut(numbers) == ["The winning numbers this week were drawn on Saturday:", "4, 8, 15, 16, 23 and 42."]
