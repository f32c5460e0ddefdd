"""Which KV slot a prompt starts in, and how much of its cache it reuses."""

from __future__ import annotations

from inference.engine.slots import SlotCache


def test_a_follow_up_goes_to_the_slot_that_holds_its_history():
    cache = SlotCache()
    for slot in (0, 1, 2):
        cache.take(slot)
    cache.keep(0, [9, 9, 9])
    cache.keep(1, [1, 2, 3, 4])  # the conversation so far: its prompt and answer
    cache.keep(2, [1, 2, 7])
    assert cache.choose([0, 1, 2], [1, 2, 3, 4, 5, 6]) == (1, 4)


def test_at_least_one_prompt_token_is_left_to_evaluate():
    """The first answer token needs logits, so a fully cached prompt still evaluates its last token."""
    cache = SlotCache()
    cache.take(0)
    cache.keep(0, [1, 2, 3, 4, 5])
    assert cache.choose([0], [1, 2, 3]) == (0, 2)


def test_without_a_shared_prefix_the_least_recently_used_slot_is_taken():
    cache = SlotCache()
    cache.take(2)
    cache.take(0)
    assert cache.choose([0, 1, 2], [5, 6]) == (1, 0)  # never used
    cache.take(1)
    assert cache.choose([0, 1, 2], [5, 6]) == (2, 0)  # used longest ago


def test_only_free_slots_are_chosen():
    cache = SlotCache()
    cache.take(0)
    cache.keep(0, [1, 2, 3])
    assert cache.choose([1, 2], [1, 2, 3, 4]) == (1, 0)


def test_a_taken_or_cleared_slot_offers_nothing_to_reuse():
    cache = SlotCache()
    cache.take(0)
    cache.keep(0, [1, 2, 3])
    assert cache.common_prefix(0, [1, 2, 8]) == 2
    cache.take(0)  # a sequence runs there: what it will hold is unknown until it ends
    assert cache.common_prefix(0, [1, 2, 8]) == 0
    cache.keep(0, [1, 2, 3])
    cache.clear(0)  # its KV cells were dropped (the sequence failed)
    assert cache.common_prefix(0, [1, 2, 8]) == 0


def test_a_cached_prefix_is_reused_by_its_owner_only():
    """Reuse shows in cached_tokens and TTFT: across people it would leak a prompt token by token."""
    cache = SlotCache()
    cache.take(0)
    cache.keep(0, [1, 2, 3, 4], owner="alice")
    assert cache.choose([0], [1, 2, 3, 4, 5], owner="bob") == (0, 0)
    assert cache.choose([0], [1, 2, 3, 4, 5], owner=None) == (0, 0)
    assert cache.choose([0], [1, 2, 3, 4, 5], owner="alice") == (0, 4)


def test_a_side_request_sharing_only_the_template_leaves_the_chat_its_slot():
    """Open WebUI asks for follow-up questions right after an answer: the request shares the
    chat template's first tokens with the chat, and must not take its slot while another is free."""
    cache = SlotCache()
    for slot in (0, 1):
        cache.take(slot)
    template = [7, 7, 7]
    chat = [*template, 1, 2, 3, 4, 5, 6]
    cache.keep(0, chat, owner="alice")
    assert cache.choose([0, 1], [*template, 9, 9, 9, 9, 9, 9, 9], owner="alice") == (1, 0)
    # The chat's next message still finds its history, and with only that slot free a side
    # request takes it, reusing what it can.
    assert cache.choose([0, 1], [*chat, 8], owner="alice") == (0, len(chat))
    assert cache.choose([0], [*template, 9, 9], owner="alice") == (0, 3)


def test_an_empty_slot_is_taken_before_one_that_holds_a_history():
    cache = SlotCache()
    cache.take(1)
    cache.take(0)
    cache.keep(1, [1, 2, 3], owner="bob")  # used first: the least recently used, but holds a chat
    assert cache.choose([0, 1], [5, 6], owner="alice") == (0, 0)
