from __future__ import annotations

from inference.engine.sequence import StopStringFilter


def feed_all(f: StopStringFilter, pieces: list[bytes]) -> str:
    return "".join(f.feed(p) for p in pieces) + f.flush()


def test_it_passes_text_through_without_stop_strings():
    assert feed_all(StopStringFilter(()), [b"Hello", b", ", b"world"]) == "Hello, world"


def test_it_joins_a_character_split_across_tokens():
    f = StopStringFilter(())
    euro = "€".encode()
    assert f.feed(euro[:1]) == ""
    assert f.feed(euro[1:]) == "€"


def test_it_stops_at_a_stop_string_split_across_tokens_and_hides_it():
    f = StopStringFilter(("<end_of_turn>",))
    out = [f.feed(b"Paris.<end"), f.feed(b"_of_"), f.feed(b"turn>ignored")]
    assert "".join(out) == "Paris."
    assert f.stopped


def test_held_text_is_released_when_it_turns_out_not_to_be_a_stop():
    f = StopStringFilter(("<end_of_turn>",))
    assert f.feed(b"a <e") == "a "
    assert f.feed(b"lephant>") == "<elephant>"
    assert not f.stopped
