"""The llama.cpp build itself: a batch of tokens gets the logits that decoding them one by one
gets, up to rounding (the same top tokens but at near ties). Prefill and speculative drafts
rely on it, and a miscompiled matrix kernel breaks it: GCC 12 compiles ggml's Intel AMX code
wrong unless dead-store elimination is off (scripts/llama-cmake-native.sh), and then a batch's
logits are garbage or the process dies."""

from __future__ import annotations

import pytest
from django.conf import settings

from bench.batch_cost import Decoder, batch_logits_agree

pytestmark = [pytest.mark.integration]


@pytest.mark.parametrize("model", ["BUNDLED_CHAT_MODEL_PATH", "BUNDLED_BASE_MODEL_PATH"])
def test_a_batch_gets_the_logits_of_token_by_token_decoding(model):
    decoder = Decoder(getattr(settings, model), threads=2, n_ctx=512)
    try:
        diff, same, positions, flipped = batch_logits_agree(decoder)
    finally:
        decoder.close()
    assert positions > 16
    # Measured: 0 with AMX (the same integer sums), and 0 for the chat model on an AVX-512 box
    # without it; there Gemma's likely logits differed by up to 0.81 between a batch of 24 and
    # one token (llamafile's sgemm for a batch, ggml's dot products for one), and 23 of 24 top
    # tokens were the same: the other was a near tie, led by 0.31 token by token and by 0.016
    # the other way in the batch. A miscompiled kernel gives noise: other top tokens, logits
    # off by tens.
    assert diff < 4.0, diff
    assert flipped < 1.0, (flipped, same, positions)
