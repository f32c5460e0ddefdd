"""The chat model's Q4_1 weights run on llama.cpp's repacked x86 kernels (patches/llama.cpp/0002):
without that patch, or with a llama-cpp-python build that lost it, every Q4_1 matmul goes one
weight row and one token at a time, and the model reads prompts 2.3x slower and decodes 1.3x
slower, which no other test would notice. On a box whose AMX build takes them (llama.cpp's AMX
buffer also holds Q4_1), that buffer counts as well."""

from __future__ import annotations

import ctypes
import platform
import re
from pathlib import Path

import llama_cpp
import pytest
from django.conf import settings

from inference.engine import runner

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        platform.machine() not in ("x86_64", "AMD64")
        or " avx2 " not in f" {Path('/proc/cpuinfo').read_text().replace(chr(10), ' ')} ",
        reason="the repacked Q4_1 kernels are x86 AVX2 / AVX-512 ones",
    ),
]

BUFFER = re.compile(r"(CPU_REPACK|AMX) model buffer size\s*=\s*([\d.]+) MiB")


def test_the_chat_models_q4_1_weights_are_repacked():
    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def collect(_level, text, _user_data):
        lines.append(text.decode("utf-8", errors="replace"))

    llama_cpp.llama_log_set(collect, ctypes.c_void_p(0))
    try:
        llama_cpp.llama_backend_init()
        params = llama_cpp.llama_model_default_params()
        model = llama_cpp.llama_model_load_from_file(str(settings.BUNDLED_CHAT_MODEL_PATH).encode(), params)
        assert model, "the chat model did not load"
        llama_cpp.llama_model_free(model)
    finally:
        llama_cpp.llama_log_set(runner._llama_log, ctypes.c_void_p(0))
    text = "".join(lines)
    sizes = [float(size) for _, size in BUFFER.findall(text)]
    # The 210 Q4_1 matrices of its 30 layers are 63 MiB; the Q8_0 embedding stays in plain memory.
    assert sum(sizes) > 50, text[-2000:]
    if "CPU_REPACK" in text:
        assert "with q4_1_8x8" in text
