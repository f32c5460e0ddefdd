"""Prompt rendering and truncation, with a word tokenizer standing in for the model's."""

from __future__ import annotations

import pytest

from inference.engine.errors import EngineError
from inference.engine.prompt import GEMMA_TURN_STOPS, ChatTemplate, PromptBuilder, render_gemma

BOS = 1


class WordTokenizer:
    """One token per whitespace-separated word; markup glued to a word makes a new word."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        words = [self.ids.setdefault(word, len(self.ids) + 2) for word in text.split()]
        return [BOS, *words] if add_special else words


def conversation(*contents: str) -> list[dict]:
    """Alternating user and assistant turns, the last one the user's."""
    n = len(contents)
    return [{"role": "user" if (n - i) % 2 else "assistant", "content": c} for i, c in enumerate(contents)]


def test_gemma_markup_gives_each_turn_and_opens_the_models_turn():
    text = render_gemma(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Capital of France?"},
        ]
    )
    assert text == (
        "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nCapital of France?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_without_a_chat_template_the_prompt_is_gemma_markup_that_stops_at_its_turn_markers():
    tokenizer = WordTokenizer()
    prompt = PromptBuilder(tokenizer, None, n_ctx=100).build(conversation("Hi there"), reserve=10)
    assert prompt.tokens == tokenizer.tokenize(render_gemma(conversation("Hi there")))
    assert prompt.dropped_messages == 0 and prompt.stop == GEMMA_TURN_STOPS
    # Each marker is one "special token" here, so the engine can stop on its id.
    assert prompt.stop_tokens == {tokenizer.ids[stop] for stop in GEMMA_TURN_STOPS}


def test_the_oldest_question_and_its_answer_are_dropped_together_until_the_prompt_fits():
    messages = [
        {"role": "system", "content": "Be brief."},
        *conversation("one " * 20, "two " * 20, "three " * 20, "four " * 5, "five"),
    ]
    builder = PromptBuilder(WordTokenizer(), None, n_ctx=60)
    prompt = builder.build(messages, reserve=10)
    assert prompt.dropped_messages == 2
    kept = [messages[0], *messages[3:]]
    assert prompt.tokens == builder.tokenizer.tokenize(render_gemma(kept))  # the system message stays
    assert len(prompt.tokens) + 10 <= 60


def test_a_last_message_longer_than_the_context_is_an_error_the_person_can_fix():
    builder = PromptBuilder(WordTokenizer(), None, n_ctx=50)
    with pytest.raises(EngineError) as caught:
        builder.build(conversation("earlier question", "earlier answer", "word " * 60), reserve=10)
    assert caught.value.code == "context_overflow"
    assert "this model's context holds 50" in caught.value.message


def test_a_raw_prompt_is_tokenized_as_is_without_turns_or_stops():
    tokenizer = WordTokenizer()
    builder = PromptBuilder(tokenizer, None, n_ctx=8)
    prompt = builder.build_raw("Once upon a time")
    assert prompt.tokens == tokenizer.tokenize("Once upon a time")
    assert prompt.stop == () and prompt.stop_tokens == frozenset() and prompt.dropped_messages == 0
    with pytest.raises(EngineError, match="Shorten the message"):
        builder.build_raw("one two three four five six seven")  # 8 tokens with BOS: no room to answer


TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
    "[{{ m['role'] }}] {{ m['content'] }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
)


def test_the_models_chat_template_renders_without_a_second_bos_and_adds_no_stop_strings():
    template = ChatTemplate(TEMPLATE, bos="<s>", eos="</s>")
    text, stop = PromptBuilder(WordTokenizer(), template, n_ctx=100).render(conversation("Hi"))
    assert text == "[user] Hi</s>\n[assistant]"  # the tokenizer adds BOS itself
    assert stop == ()


def test_a_template_that_refuses_the_conversation_says_so_in_words():
    builder = PromptBuilder(WordTokenizer(), ChatTemplate(TEMPLATE, bos="", eos=""), n_ctx=100)
    with pytest.raises(EngineError) as caught:
        builder.build([{"role": "system", "content": "Be brief."}, *conversation("Hi")], reserve=10)
    assert caught.value.code == "template_error"
    assert caught.value.message.endswith("refused the conversation: no system role")
