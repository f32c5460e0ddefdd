"""Prompts: a conversation rendered with the model's chat template (or Gemma's turn markup),
tokenized, and cut to fit the context.

No llama.cpp here: the Runner passes itself in as the tokenizer, so this runs in tests with
any function from text to token ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn, Protocol

from jinja2.sandbox import ImmutableSandboxedEnvironment

from inference.engine.errors import EngineError

# Gemma's turn markup: the bundled Gemma 3 base GGUF carries no chat template, and this
# markup is what Gemma-family models (and many others) are trained to follow.
GEMMA_TURN_STOPS = ("<end_of_turn>", "<start_of_turn>")


class Tokenizer(Protocol):
    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        """Token ids of text; add_special adds what the model starts a text with (BOS)."""


@dataclass
class Prompt:
    tokens: list[int]
    dropped_messages: int
    stop: tuple[str, ...]
    stop_tokens: frozenset[int] = frozenset()


def render_gemma(messages: list[dict]) -> str:
    """Gemma turn markup; a system message is folded into the first user turn, as Gemma does."""
    parts: list[str] = []
    system = ""
    for msg in messages:
        role, content = msg["role"], msg["content"]
        if role == "system":
            system = content.strip() + "\n\n"
            continue
        turn = "model" if role == "assistant" else "user"
        if turn == "user" and system:
            content, system = system + content, ""
        parts.append(f"<start_of_turn>{turn}\n{content.strip()}<end_of_turn>\n")
    parts.append("<start_of_turn>model\n")
    return "".join(parts)


def _raise_template_error(message: str) -> NoReturn:
    raise EngineError("template_error", f"The model's chat template refused the conversation: {message}")


class ChatTemplate:
    """The chat template a GGUF carries (Jinja), run in a sandbox: it is the model file's code."""

    def __init__(self, source: str, *, bos: str, eos: str):
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_template_error
        self._template = env.from_string(source)
        self.bos, self.eos = bos, eos

    def render(self, messages: list[dict]) -> str:
        text = self._template.render(
            messages=messages, add_generation_prompt=True, bos_token=self.bos, eos_token=self.eos
        )
        # The template may write BOS itself; don't let the tokenizer add a second one.
        if self.bos and text.startswith(self.bos):
            text = text[len(self.bos) :]
        return text


class PromptBuilder:
    """One model's way from messages (or a completion's raw text) to a sequence's tokens."""

    def __init__(self, tokenizer: Tokenizer, template: ChatTemplate | None, *, n_ctx: int):
        self.tokenizer = tokenizer
        self.template = template
        self.n_ctx = n_ctx  # one sequence's context

    def render(self, messages: list[dict]) -> tuple[str, tuple[str, ...]]:
        """The prompt text and the stop strings that end the model's turn in it."""
        if self.template is None:
            return render_gemma(messages), GEMMA_TURN_STOPS
        return self.template.render(messages), ()

    def build(self, messages: list[dict], *, reserve: int) -> Prompt:
        """Render and tokenize; drop the oldest turns while the prompt plus `reserve` won't fit.

        1. Render the whole conversation and tokenize it.
        2. While it is too long and more than the last message remains, drop the oldest
           non-system message (a user turn and its answer go together).
        3. If the last message alone does not fit the context, it is an error the user can fix.
        """
        system = [m for m in messages if m["role"] == "system"]
        turns = [m for m in messages if m["role"] != "system"]
        dropped = 0
        while True:
            text, stop = self.render(system + turns)
            tokens = self.tokenizer.tokenize(text)
            if len(tokens) + reserve <= self.n_ctx or len(turns) <= 1:
                break
            cut = 2 if len(turns) > 2 and turns[0]["role"] == "user" and turns[1]["role"] == "assistant" else 1
            turns = turns[cut:]
            dropped += cut
        self._check_fits(tokens)
        return Prompt(tokens=tokens, dropped_messages=dropped, stop=stop, stop_tokens=self.special_tokens(stop))

    def build_raw(self, text: str) -> Prompt:
        """A completion prompt: the text as is (BOS added per the model), no turns, no stops."""
        tokens = self.tokenizer.tokenize(text)
        self._check_fits(tokens)
        return Prompt(tokens=tokens, dropped_messages=0, stop=())

    def special_tokens(self, texts: tuple[str, ...]) -> frozenset[int]:
        """Ids of stop strings that are single special tokens (they detokenize to nothing, so
        the text filter would never see them: e.g. Gemma's <start_of_turn>)."""
        ids = set()
        for text in texts:
            tokens = self.tokenizer.tokenize(text, add_special=False)
            if len(tokens) == 1:
                ids.add(tokens[0])
        return frozenset(ids)

    def _check_fits(self, tokens: list[int]) -> None:
        if len(tokens) >= self.n_ctx:
            raise EngineError(
                "context_overflow",
                f"The prompt is {len(tokens):,} tokens; this model's context holds {self.n_ctx:,}. "
                "Shorten the message or start a new conversation.",
            )
