"""The models the library recommends to a household, smallest first (issue 39's curated list).

Each is an instruct model in Ollama's library, named with its Q4_K_M tag so the size is the
file's (Gemma 3 4B from ggml-org's Hugging Face GGUF: Ollama's own file adds vision tensors
llama.cpp does not load from it); the table in docs/install.md is this list (tests/dashboard/library/test_curated.py
checks they agree). Sizes are the registry's, in MB of 10^6 bytes, rounded; layers are the
models' own configurations' (num_hidden_layers).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class Recommended:
    name: str  # as `ollama pull` and HomeAI's pull box take it
    title: str
    size_mb: int  # the Q4_K_M GGUF, what the download is and about what it needs loaded
    layers: int  # its transformer blocks (the decode forecast's layer term: inference/speed.py)
    licence: str
    licence_url: str
    good_at: str


RECOMMENDED: tuple[Recommended, ...] = (
    Recommended(
        "qwen2.5:0.5b-instruct-q4_K_M",
        "Qwen 2.5 0.5B Instruct",
        398,
        24,
        "Apache 2.0",
        "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/LICENSE",
        _("Quick short answers on the smallest boxes; many languages."),
    ),
    Recommended(
        "llama3.2:1b-instruct-q4_K_M",
        "Llama 3.2 1B Instruct",
        808,
        16,
        "Llama 3.2 Community License",
        "https://www.llama.com/llama3_2/license/",
        _("Everyday chat and summaries on a small box; English first."),
    ),
    Recommended(
        "gemma3:1b-it-q4_K_M",
        "Gemma 3 1B",
        815,
        26,
        "Gemma Terms of Use",
        "https://ai.google.dev/gemma/terms",
        _("Friendly chat, writing help and simple questions."),
    ),
    Recommended(
        "qwen2.5:1.5b-instruct-q4_K_M",
        "Qwen 2.5 1.5B Instruct",
        986,
        28,
        "Apache 2.0",
        "https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct/blob/main/LICENSE",
        _("Homework help, maths and many languages for its size."),
    ),
    Recommended(
        "smollm2:1.7b-instruct-q4_K_M",
        "SmolLM2 1.7B Instruct",
        1100,
        24,
        "Apache 2.0",
        "https://huggingface.co/HuggingFaceTB/SmolLM2-1.7B-Instruct",
        _("The bundled model's big sibling: better answers, same style; English."),
    ),
    Recommended(
        "llama3.2:3b-instruct-q4_K_M",
        "Llama 3.2 3B Instruct",
        2000,
        28,
        "Llama 3.2 Community License",
        "https://www.llama.com/llama3_2/license/",
        _("A good all-rounder: chat, summaries, following instructions, tool calls."),
    ),
    Recommended(
        "hf.co/ggml-org/gemma-3-4b-it-GGUF:Q4_K_M",
        "Gemma 3 4B",
        2490,
        34,
        "Gemma Terms of Use",
        "https://ai.google.dev/gemma/terms",
        _("Fine writing and many languages; the largest here with Phi-4-mini."),
    ),
    Recommended(
        "phi4-mini:3.8b-q4_K_M",
        "Phi-4-mini Instruct",
        2500,
        32,
        "MIT",
        "https://huggingface.co/microsoft/Phi-4-mini-instruct/blob/main/LICENSE",
        _("Reasoning, maths and code; long documents (128K context)."),
    ),
)


def recommended() -> list[Recommended]:
    return list(RECOMMENDED)
