"""How many sequences an engine holds and the context each gets, from what the model's KV cache
costs per token and the memory the model may take (HOMEAI_SLOTS=auto, the default).

Pure arithmetic on numbers from the GGUF header (model_library.ModelFile), so the worker, the
settings (the task threads) and the tests agree on it without loading a model.
"""

from __future__ import annotations

from dataclasses import dataclass

# The most slots "auto" gives one engine. A slot costs only KV memory while idle, but every
# running sequence adds its share to each decode step, which on a 2-core CPU the other answers
# wait for: 8 is what the household soak needs (8 people each keep a conversation going) at a
# step time still under 2x of 4 decodes (docs/performance.md, "Household soak"). A GPU, or a
# box with more cores, sets HOMEAI_SLOTS itself.
MAX_AUTO_SLOTS = 8
# When a model's KV cost is unknown (no attention metadata in its header): the old fixed count.
UNKNOWN_COST_SLOTS = 4
# Below this the chat's own history no longer fits (a system prompt and a few turns).
MIN_CONTEXT = 1024
CONTEXT_STEP = 256


@dataclass(frozen=True)
class Sizing:
    slots: int
    context: int  # tokens per slot: llama.cpp's n_ctx is slots * context


def size_engine(
    *,
    kv_bytes_per_token: int,
    weights_bytes: int,
    budget_bytes: int,
    context: int,
    trained_context: int = 0,
    slots: int | None = None,
    max_slots: int = MAX_AUTO_SLOTS,
) -> Sizing:
    """The slots and context per slot of one engine.

    1. The context is the one asked for, never past what the model was trained for.
    2. An explicit slot count (HOMEAI_SLOTS) wins; otherwise as many slots of that context as
       the budget holds beside the weights, at least 1 and at most max_slots.
    3. When the budget cannot hold even one slot of that context, the context shrinks (in steps
       of 256, not under MIN_CONTEXT) until one does: a model that loads with a shorter context
       beats one that does not load.
    """
    if trained_context:
        context = min(context, trained_context)
    if slots is not None:
        return Sizing(slots=slots, context=context)
    if kv_bytes_per_token <= 0:
        return Sizing(slots=min(UNKNOWN_COST_SLOTS, max_slots), context=context)
    room = max(budget_bytes - weights_bytes, 0)
    fit = room // (kv_bytes_per_token * context)
    if fit >= 1:
        return Sizing(slots=int(min(fit, max_slots)), context=context)
    fitting = room // kv_bytes_per_token // CONTEXT_STEP * CONTEXT_STEP
    return Sizing(slots=1, context=int(max(min(fitting, context), min(MIN_CONTEXT, context))))
