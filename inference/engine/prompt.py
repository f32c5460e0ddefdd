"""Prompts: a conversation rendered with the model's chat template (or Gemma's turn markup),
tokenized, and cut to fit the context.

No llama.cpp here: the Runner passes itself in as the tokenizer, so this runs in tests with
any function from text to token ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn, Protocol

from jinja2.sandbox import ImmutableSandboxedEnvironment

from inference.engine.errors import EngineError
from inference.engine.tools import CALL_OPEN, RESPONSE_MARKUP, RESPONSE_OPEN, tool_definitions, with_tools_in_system

# Gemma's turn markup: the bundled Gemma 3 base GGUF carries no chat template, and this
# markup is what Gemma-family models (and many others) are trained to follow.
GEMMA_TURN_STOPS = ("<end_of_turn>", "<start_of_turn>")


# While the template renders, each message's text is a stand-in: a mark (private-use
# characters and the message's index) between two ideographic spaces, which str.strip() and
# Jinja's trim remove as they would the text's own spaces, and no template writes.
_PAD = "\u3000"
_MARK = re.compile(f"({_PAD})?\ue000(\\d+)\ue001({_PAD})?")


class Tokenizer(Protocol):
    def tokenize(self, text: str, *, add_special: bool = True, parse_special: bool = True) -> list[int]:
        """Token ids of text; add_special adds what the model starts a text with (BOS);
        parse_special reads special-token text (<|im_end|>) as those tokens, else as plain text."""


@dataclass
class Prompt:
    tokens: list[int]
    dropped_messages: int
    stop: tuple[str, ...]
    stop_tokens: frozenset[int] = frozenset()
    hidden: tuple[str, ...] = ()  # text never shown in the answer (tools.RESPONSE_MARKUP)
    grammar: object = None  # the grammar.Grammar the answer is sampled under, if any


def _hidden(messages: list[dict], tools: tuple[dict, ...]) -> tuple[str, ...]:
    """The tool markup, hidden from answers in a conversation with tools or their results."""
    if tools or any(RESPONSE_OPEN in (m.get("content") or "") for m in messages):
        return RESPONSE_MARKUP
    return ()


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


def fold_system(messages: list[dict]) -> list[dict]:
    """The system message folded into the first user turn, for templates without a system role
    (Gemma's, Mistral's): what those models are trained to read."""
    system = "\n\n".join(m["content"].strip() for m in messages if m["role"] == "system")
    turns = [dict(m) for m in messages if m["role"] != "system"]
    for turn in turns:
        if turn["role"] == "user":
            turn["content"] = f"{system}\n\n{turn['content']}" if system else turn["content"]
            break
    return turns


def _cut_points(turns: list[dict]) -> list[int]:
    """How many of the oldest turns may be dropped, in the order they go: a user turn and the
    answer after it together, one message otherwise; the last message always stays."""
    cuts = [0]
    while len(turns) - cuts[-1] > 1:
        p = cuts[-1]
        pair = len(turns) - p > 2 and turns[p]["role"] == "user" and turns[p + 1]["role"] == "assistant"
        cuts.append(p + (2 if pair else 1))
    return cuts


class ChatTemplate:
    """The chat template a GGUF carries (Jinja), run in a sandbox: it is the model file's code.

    Rendered as transformers and llama.cpp render it: bos_token and eos_token are the model's,
    and whatever the template writes (BOS included) is kept; PromptBuilder adds a BOS only where
    the model asks for one and the template did not write it.
    """

    def __init__(self, source: str, *, bos: str, eos: str):
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise_template_error
        self._template = env.from_string(source)
        self.bos, self.eos = bos, eos
        # A template that lists `tools` itself and writes calls as <tool_call> (Qwen 2.5, Hermes)
        # renders them; any other gets them in its system message (tools.py), the same text.
        self.renders_tools = "tools" in source and CALL_OPEN in source

    def render(self, messages: list[dict], tools: tuple[dict, ...] = ()) -> str:
        try:
            return self._render(messages, tools)
        except EngineError:
            if not any(m["role"] == "system" for m in messages):
                raise
            return self._render(fold_system(messages), tools)  # a template without a system role

    def _render(self, messages: list[dict], tools: tuple[dict, ...]) -> str:
        extra = {"tools": tool_definitions(tools)} if tools else {}
        try:
            return self._template.render(
                messages=messages, add_generation_prompt=True, bos_token=self.bos, eos_token=self.eos, **extra
            )
        except EngineError:
            raise
        except Exception as exc:  # the template is the model file's code: any failure is its refusal
            _raise_template_error(f"{type(exc).__name__}: {exc}")


class PromptBuilder:
    """One model's way from messages (or a completion's raw text) to a sequence's tokens."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        template: ChatTemplate | None,
        *,
        n_ctx: int,
        bos_token: int | None = None,
        why: str = "",
    ):
        self.tokenizer = tokenizer
        self.template = template
        self.n_ctx = n_ctx  # the most one request may fill (Runner.n_ctx_max)
        self.why = why  # why it is that many, for the refusal (runner.request_limit)
        self.bos_token = bos_token  # the BOS id when the model's GGUF asks for one (add_bos_token)

    def render(self, messages: list[dict], tools: tuple[dict, ...] = ()) -> tuple[str, tuple[str, ...]]:
        """The prompt text and the stop strings that end the model's turn in it."""
        if tools and (self.template is None or not self.template.renders_tools):
            messages, tools = with_tools_in_system(messages, tools), ()
        if self.template is None:
            return render_gemma(messages), GEMMA_TURN_STOPS
        return self.template.render(messages, tools), ()

    def build(self, messages: list[dict], *, reserve: int, tools: tuple[dict, ...] = ()) -> Prompt:
        """Render and tokenize; drop the oldest turns while the prompt plus `reserve` won't fit.

        1. Render the whole conversation and tokenize it: most prompts fit, and this is all.
        2. Otherwise the cut points: the oldest non-system message goes first, a user turn and
           its answer together, the last message always stays.
        3. Tokenize each turn's text once; the prefix sums say how far to cut so that at least
           the surplus is gone (a turn's markup only makes its drop larger), and a binary search
           between there and the full conversation finds the smallest cut that fits: a few
           renders, not one per dropped turn (a 20,000-message request would take minutes).
        4. If the last message alone does not fit the context, it is an error the user can fix.
        """
        system = [m for m in messages if m["role"] == "system"]
        turns = [m for m in messages if m["role"] != "system"]

        def attempt(cut: int) -> tuple[list[int], tuple[str, ...]]:
            return self.tokens(system + turns[cut:], tools)

        tokens, stop = attempt(0)
        surplus = len(tokens) + reserve - self.n_ctx
        cuts = _cut_points(turns)
        if surplus <= 0 or len(cuts) == 1:
            self._check_fits(tokens)
            return self._prompt(tokens, 0, stop, _hidden(messages, tools))
        dropped_tokens = [0]
        for turn in turns:
            dropped_tokens.append(dropped_tokens[-1] + len(self._plain(turn["content"])))
        hi = next((i for i, cut in enumerate(cuts) if dropped_tokens[cut] >= surplus), len(cuts) - 1)
        found = attempt(cuts[hi])
        if len(found[0]) + reserve > self.n_ctx:
            hi = len(cuts) - 1  # the estimate fell short: only the last message is sure to be smallest
            found = attempt(cuts[hi])
        lo = 0  # the full conversation does not fit
        while hi - lo > 1:
            mid = (lo + hi) // 2
            tried = attempt(cuts[mid])
            if len(tried[0]) + reserve <= self.n_ctx:
                hi, found = mid, tried
            else:
                lo = mid
        tokens, stop = found
        self._check_fits(tokens)
        return self._prompt(tokens, cuts[hi], stop, _hidden(messages, tools))

    def _prompt(self, tokens: list[int], dropped: int, stop: tuple[str, ...], hidden=()) -> Prompt:
        stop_tokens = self.special_tokens(stop)
        return Prompt(tokens=tokens, dropped_messages=dropped, stop=stop, stop_tokens=stop_tokens, hidden=hidden)

    def tokens(self, messages: list[dict], tools: tuple[dict, ...] = ()) -> tuple[list[int], tuple[str, ...]]:
        """The conversation's prompt tokens and stop strings. The template's own text is read
        with its special tokens (<|im_start|>, <start_of_turn>); the messages' text never is:
        a person who writes "<|im_end|><|im_start|>system" gets those characters read as text,
        not a turn of their own making.

        1. Render with each message's text replaced by a mark (_MARK): the template's text is
           what lies between the marks.
        2. Tokenize the template's pieces with special tokens parsed and each message's text
           (stripped where the template stripped its mark) without.
        3. A template that changed a mark (or left a message out) cannot be taken apart so:
           the whole render is tokenized as before, and refused when a message's text holds
           special-token text, since that would be read as the template's own.
        4. Nothing is added but the BOS the model asks for when the template did not write it
           (a model whose BOS is a turn marker, such as ChatML's <|im_start|> with
           add_bos_token false, gets exactly the template's tokens); Gemma markup gets the BOS
           the model adds to any text."""
        if tools and (self.template is None or not self.template.renders_tools):
            messages, tools = with_tools_in_system(messages, tools), ()
        marked = [dict(m, content=f"{_PAD}\ue000{i}\ue001{_PAD}") for i, m in enumerate(messages)]
        text, stop = self.render(marked, tools)
        pieces = _MARK.split(text)  # template text, then (pad, index, pad, template text) per mark
        indexes = [int(i) for i in pieces[2::4]]
        if sorted(set(indexes)) != list(range(len(messages))):
            tokens = self._whole(messages, tools)
        else:
            tokens = self._start(pieces[0])
            for at in range(1, len(pieces), 4):
                before, index, after, template = pieces[at : at + 4]
                content = messages[int(index)]["content"]
                content = content if before else content.lstrip()
                content = content if after else content.rstrip()
                tokens += self._plain(content) + self._special(template)
        if self.bos_token is not None and tokens[:1] != [self.bos_token]:
            tokens.insert(0, self.bos_token)
        return tokens, stop

    def _whole(self, messages: list[dict], tools: tuple[dict, ...]) -> list[int]:
        for message in messages:
            if self._special(message["content"]) != self._plain(message["content"]):
                raise EngineError(
                    "template_error",
                    "This model's chat template rewrites messages, and a message holds the text of one of "
                    "the model's control tokens (such as <|im_end|>); remove it and send again.",
                )
        return self._start(self.render(messages, tools)[0])

    def _start(self, text: str) -> list[int]:
        """The prompt's first text; Gemma markup gets the BOS the model adds to any text."""
        return self.tokenizer.tokenize(text) if self.template is None else self._special(text)

    def _special(self, text: str) -> list[int]:
        return self.tokenizer.tokenize(text, add_special=False) if text else []

    def _plain(self, text: str) -> list[int]:
        return self.tokenizer.tokenize(text, add_special=False, parse_special=False) if text else []

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
                f"The prompt is {len(tokens):,} tokens; this model's context holds {self.n_ctx:,}"
                + (f" ({self.why})" if self.why else "")
                + ". Shorten the message or start a new conversation.",
            )
