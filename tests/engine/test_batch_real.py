"""The llama.cpp build itself: a batch of tokens gets the logits that decoding them one by one
gets. Prefill and speculative drafts rely on it, and a miscompiled matrix kernel breaks it: GCC
12 compiles ggml's Intel AMX code wrong unless dead-store elimination is off
(scripts/llama-cmake-native.sh), and then a batch's logits are garbage or the process dies."""

from __future__ import annotations

import pytest
from django.conf import settings

from bench.batch_cost import Decoder, batch_logits_agree

pytestmark = [pytest.mark.integration]


@pytest.mark.parametrize("model", ["BUNDLED_CHAT_MODEL_PATH", "BUNDLED_BASE_MODEL_PATH"])
def test_a_batch_gets_the_logits_of_token_by_token_decoding(model):
    decoder = Decoder(getattr(settings, model), threads=2, n_ctx=512)
    try:
        diff, same, positions = batch_logits_agree(decoder)
    finally:
        decoder.close()
    assert positions > 16
    assert same == positions
    # Measured on the development box: 0 with AMX (the same integer sums); without it Gemma's
    # likely logits differed by up to 1.0 between a batch of 24 and one token (another kernel
    # and order). A miscompiled kernel gives noise: other top tokens, logits off by tens.
    assert diff < 4.0, diff
