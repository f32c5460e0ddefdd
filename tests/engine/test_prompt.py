from __future__ import annotations

from inference.engine.runner import render_gemma


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
