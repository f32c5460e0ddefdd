"""Every chat-template model in the library gets the prompt its reference formatting gives: the
template rendered as llama-cpp-python's Jinja2ChatFormatter renders it (what transformers and
llama.cpp do), tokenized with special tokens parsed, and a BOS only where the GGUF asks for one."""

from __future__ import annotations

import pytest
from django.conf import settings
from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from inference import model_library
from inference.engine.runner import Runner, RunnerConfig
from inference.gguf_header import read_header

pytestmark = [pytest.mark.integration]

CONVERSATIONS = {
    "one question": [{"role": "user", "content": "What is a NAS good for?"}],
    "with a system prompt and history": [
        {"role": "system", "content": "Answer in one sentence."},
        {"role": "user", "content": "What is a NAS good for?"},
        {"role": "assistant", "content": "Keeping a home's files, backups and media in one place."},
        {"role": "user", "content": "And for *backups*, with `rsync`?"},
    ],
}


def chat_models() -> list:
    models = [m for m in model_library.scan(settings.MODELS_DIR) if m.usable]
    return [m for m in models if read_header(m.path).metadata.get("tokenizer.chat_template")]


def reference_tokens(path: str, messages: list[dict]) -> list[int]:
    meta = read_header(path).metadata
    vocab = Llama(model_path=path, vocab_only=True, verbose=False)
    bos, eos = (vocab.detokenize([i], special=True).decode() for i in (vocab.token_bos(), vocab.token_eos()))
    formatter = Jinja2ChatFormatter(meta["tokenizer.chat_template"], eos_token=eos, bos_token=bos)
    tokens = vocab.tokenize(formatter(messages=messages).prompt.encode(), add_bos=False, special=True)
    if meta.get("tokenizer.ggml.add_bos_token", False) and tokens[:1] != [vocab.token_bos()]:
        tokens.insert(0, vocab.token_bos())
    return tokens


def test_the_library_has_a_chat_model():
    assert settings.BUNDLED_CHAT_MODEL_PATH.name in [m.name for m in chat_models()]


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_every_chat_model_builds_its_reference_prompt_tokens(name):
    messages = CONVERSATIONS[name]
    for model in chat_models():
        runner = Runner(RunnerConfig(model_path=settings.MODELS_DIR / model.name, n_ctx_seq=1024, n_slots=1))
        runner.load()
        try:
            built = runner.prompts.build(messages, reserve=16).tokens
        finally:
            runner.close()
        assert built == reference_tokens(model.path, messages), model.name
