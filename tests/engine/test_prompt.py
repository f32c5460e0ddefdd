"""Prompt rendering and truncation, with a word tokenizer standing in for the model's."""

from __future__ import annotations

import random
import re

import pytest

from inference.engine.errors import EngineError
from inference.engine.prompt import GEMMA_TURN_STOPS, ChatTemplate, PromptBuilder, render_gemma
from inference.engine.tools import RESPONSE_MARKUP, response_text

BOS = 1


SPECIAL = re.compile(r"(<s>|</s>|<\|im_start\|>|<\|im_end\|>|<start_of_turn>|<end_of_turn>)")


class WordTokenizer:
    """One token per whitespace-separated word; special tokens' text is a token of its own (as
    llama.cpp reads it) when parse_special, else part of the word it is glued to."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {"<s>": BOS}

    def tokenize(self, text: str, *, add_special: bool = True, parse_special: bool = True) -> list[int]:
        parts = SPECIAL.split(text) if parse_special else [text]
        words = [word for i, part in enumerate(parts) for word in ([part] if i % 2 else part.split())]
        tokens = [self.ids.setdefault(word, len(self.ids) + 2) for word in words]
        return [BOS, *tokens] if add_special and tokens[:1] != [BOS] else tokens


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


class CountingTokenizer(WordTokenizer):
    def __init__(self) -> None:
        super().__init__()
        self.words = 0  # words tokenized, all calls together

    def tokenize(self, text: str, *, add_special: bool = True, parse_special: bool = True) -> list[int]:
        tokens = super().tokenize(text, add_special=add_special, parse_special=parse_special)
        self.words += len(tokens)
        return tokens


def drop_one_at_a_time(builder: PromptBuilder, messages: list[dict], reserve: int) -> int:
    """The rule, written the slow way: drop the oldest turn (a question with its answer) until it fits."""
    system = [m for m in messages if m["role"] == "system"]
    turns = [m for m in messages if m["role"] != "system"]
    dropped = 0
    while len(turns) > 1:
        text, _ = builder.render(system + turns)
        if len(builder.tokenizer.tokenize(text)) + reserve <= builder.n_ctx:
            break
        cut = 2 if len(turns) > 2 and turns[0]["role"] == "user" and turns[1]["role"] == "assistant" else 1
        turns, dropped = turns[cut:], dropped + cut
    return dropped


def test_the_cut_is_the_one_dropping_turn_by_turn_would_find():
    rng = random.Random(7)
    checked = 0
    for _ in range(300):
        n = rng.randint(1, 30)
        roles = [rng.choice(["user", "user", "assistant", "system"]) for _ in range(n - 1)] + ["user"]
        messages = [{"role": r, "content": "w " * rng.randint(1, 12)} for r in roles]
        builder = PromptBuilder(WordTokenizer(), None, n_ctx=rng.randint(20, 120))
        reserve = rng.randint(0, 10)
        try:
            got = builder.build(messages, reserve=reserve).dropped_messages
        except EngineError:
            continue  # the last message alone does not fit: checked below
        assert got == drop_one_at_a_time(builder, messages, reserve), (messages, builder.n_ctx, reserve)
        checked += got > 0
    assert checked > 50  # most cases had something to drop


def test_twenty_thousand_messages_are_fitted_with_a_few_renders_not_one_per_message():
    tokenizer = CountingTokenizer()
    builder = PromptBuilder(tokenizer, None, n_ctx=4096)
    messages = conversation(*(["a"] * 19_999), "What now?")
    prompt = builder.build(messages, reserve=256)
    assert 4096 - 16 < len(prompt.tokens) + 256 <= 4096 and prompt.dropped_messages > 18_000
    # Gemma markup makes each one-word message ~3 words: one full render is ~60,000 words.
    assert tokenizer.words < 30 * 60_000


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
    "{% if m['role'] == 'assistant' and loop.first %}{{ raise_exception('the user speaks first') }}{% endif %}"
    "[{{ m['role'] }}] {{ m['content'] }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
)
# ChatML as SmolLM2 writes it: no BOS of its own, and the model's BOS is <|im_start|>.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_template_that_writes_bos_keeps_it_once_and_adds_no_stop_strings():
    template = ChatTemplate(TEMPLATE, bos="<s>", eos="</s>")
    builder = PromptBuilder(WordTokenizer(), template, n_ctx=100, bos_token=BOS)
    text, stop = builder.render(conversation("Hi"))
    assert text == "<s>[user] Hi</s>\n[assistant]"  # as transformers and llama.cpp render it
    assert stop == ()
    tokens = builder.build(conversation("Hi"), reserve=10).tokens
    assert tokens[0] == BOS and tokens.count(BOS) == 1


def test_a_model_without_add_bos_gets_exactly_the_templates_tokens():
    """The bug this guards: BOS text stripped for a tokenizer that never adds it back dropped
    ChatML's first <|im_start|> (38 prompt tokens where the reference gives 39)."""
    builder = PromptBuilder(WordTokenizer(), ChatTemplate(CHATML, bos="<|im_start|>", eos="<|im_end|>"), n_ctx=100)
    text, _ = builder.render(conversation("Hi"))
    assert text.startswith("<|im_start|>user")
    assert builder.build(conversation("Hi"), reserve=10).tokens == builder.tokenizer.tokenize(text, add_special=False)


def test_a_model_that_asks_for_bos_gets_one_before_a_template_that_writes_none():
    builder = PromptBuilder(WordTokenizer(), ChatTemplate(CHATML, bos="<s>", eos="</s>"), n_ctx=100, bos_token=BOS)
    tokens = builder.build(conversation("Hi"), reserve=10).tokens
    assert tokens[0] == BOS and tokens.count(BOS) == 1


def test_a_system_message_is_folded_into_the_first_user_turn_when_the_template_has_no_system_role():
    builder = PromptBuilder(WordTokenizer(), ChatTemplate(TEMPLATE, bos="", eos=""), n_ctx=100)
    text, _ = builder.render([{"role": "system", "content": "Be brief."}, *conversation("Hi")])
    assert text == "[user] Be brief.\n\nHi\n[assistant]"


def test_a_template_that_refuses_the_conversation_says_so_in_words():
    builder = PromptBuilder(WordTokenizer(), ChatTemplate(TEMPLATE, bos="", eos=""), n_ctx=100)
    with pytest.raises(EngineError) as caught:
        builder.build([{"role": "assistant", "content": "Hello"}, *conversation("Hi")], reserve=10)
    assert caught.value.code == "template_error"
    assert caught.value.message.endswith("refused the conversation: the user speaks first")


def test_a_template_that_crashes_is_a_refusal_in_words_not_an_exception():
    crashing = ChatTemplate("{{ messages[0]['content'] / 2 }}", bos="", eos="")
    builder = PromptBuilder(WordTokenizer(), crashing, n_ctx=100)
    with pytest.raises(EngineError) as caught:
        builder.build(conversation("Hi"), reserve=10)
    assert caught.value.code == "template_error" and "TypeError" in caught.value.message


def test_answers_in_a_conversation_with_tools_or_their_results_hide_the_tools_markup():
    builder = PromptBuilder(WordTokenizer(), None, n_ctx=1000)
    weather = {"name": "weather", "description": "The weather in a city.", "parameters": {"type": "object"}}
    assert builder.build(conversation("Hi there"), reserve=10).hidden == ()
    assert builder.build(conversation("Weather in Paris?"), reserve=10, tools=(weather,)).hidden == RESPONSE_MARKUP
    results = conversation("Weather in Paris?", "<tool_call>…</tool_call>", response_text("18 C"))
    assert builder.build(results, reserve=10).hidden == RESPONSE_MARKUP
