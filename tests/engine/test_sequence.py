from __future__ import annotations

from inference.engine.sequence import StopStringFilter
from inference.engine.tools import RESPONSE_MARKUP


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


MARKUP = RESPONSE_MARKUP


def test_the_tools_markup_is_hidden_wherever_the_model_writes_it_token_by_token():
    """The bundled model often answers after a tool call as if it were one more result."""
    text = "<tool_response>\n18 degrees in Paris\n</tool_response>, it says: <tool_response>"
    pieces = [text[i : i + 3].encode() for i in range(0, len(text), 3)]  # every split point's kind
    assert feed_all(StopStringFilter(("<|im_end|>",), MARKUP), pieces) == "18 degrees in Paris, it says: "


def test_hidden_markup_goes_with_a_stop_string_and_a_line_of_its_own():
    f = StopStringFilter(("<|im_end|>",), MARKUP)
    out = [f.feed(b"<tool_response>"), f.feed(b"\nSunny."), f.feed(b"\n</tool_response><|im_end|>more")]
    assert "".join(out) + f.flush() == "Sunny." and f.stopped


def test_text_like_the_markup_is_released_once_it_is_not():
    f = StopStringFilter((), MARKUP)
    assert f.feed(b"a <tool_re") == "a "
    assert f.feed(b"sult>") == "<tool_result>"


def test_hidden_markup_never_straddles_what_is_released_and_what_is_held():
    # "\n" could start the stop "\n\n": the text is held from the markup's start, not inside it.
    f = StopStringFilter(("\n\n",), ("ab\n",))
    assert f.feed(b"x ab\n") == "x "
    assert f.feed(b"y") == "y"
    assert f.flush() == ""
