"""The Runner: every llama.cpp call lives here, and only the engine thread calls it.

It owns one model and one context with a KV slot per sequence (kv_unified: the slots share one
cache of n_slots x n_ctx_seq cells, and a sequence's cells may lie anywhere in it, so one request
may fill up to the model's trained context while others leave cells free), builds a llama_batch
from a Step, and samples each sequence with its own chain.
The pure parts it drives live beside it: prompts (prompt.py) and what each slot caches (slots.py).
"""

from __future__ import annotations

import collections
import ctypes
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import llama_cpp
import numpy as np

from inference.engine.errors import EngineError
from inference.engine.grammar import Grammar
from inference.engine.kvstore import KVStore
from inference.engine.prompt import ChatTemplate, PromptBuilder
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.slots import SlotCache
from inference.engine.step import Step

log = logging.getLogger(__name__)

# A saved conversation is restored only when it holds this many more tokens than the slot's own
# cache: restoring copies the whole state, which costs more than evaluating a few tokens.
RESTORE_MARGIN = 32

# ggml's log levels (DEBUG=1, INFO=2, WARN=3, ERROR=4, CONT=5). llama-cpp-python's own
# callback maps an older numbering and prints all of llama.cpp's load chatter to stderr;
# ours forwards warnings and errors to Python logging and drops the rest.
_GGML_WARN, _GGML_ERROR = 3, 4


@llama_cpp.llama_log_callback
def _llama_log(level: int, text: bytes, _user_data) -> None:
    if level in (_GGML_WARN, _GGML_ERROR):
        log.log(
            logging.ERROR if level == _GGML_ERROR else logging.WARNING,
            "llama.cpp: %s",
            text.decode("utf-8", errors="replace").rstrip(),
        )


@dataclass(frozen=True)
class RunnerConfig:
    model_path: Path
    # Each slot's share of the cache (HOMEAI_CONTEXT): the cache holds n_slots x n_ctx_seq cells,
    # and one request may fill up to the model's trained context of them (Runner.n_ctx_max).
    n_ctx_seq: int = 4096
    n_slots: int = 4
    n_batch: int = 512
    n_threads: int = 0
    n_gpu_layers: int = 0
    # Conversations that resume hot (kvstore.py): the RAM and disk their saved KV states may
    # take, and the folder they spill to (0 and None: off).
    kv_ram_bytes: int = 0
    kv_disk_bytes: int = 0
    kv_dir: Path | None = None


@dataclass(frozen=True)
class ModelInfo:
    name: str
    path: str
    size_bytes: int
    n_params: int
    description: str
    chat_template: bool
    n_ctx_train: int
    n_layers: int = 0  # the decode forecast's and the why panel's layer term (inference/speed.py)


def request_limit(config: RunnerConfig, *, n_cells: int, n_ctx_train: int) -> tuple[int, str]:
    """The most KV cells one request may fill (prompt and answer), and why it is that many.

    The model's trained context, when the cache has that many cells: slots are shares of one
    cache, and a long request borrows the cells others leave free (the scheduler reserves them).
    Never under a slot's share (a model that reports no trained context, or one shorter than
    the share asked for, keeps the share), never past the cache."""
    trained = n_ctx_train or n_cells
    limit = min(n_cells, max(trained, config.n_ctx_seq))
    if limit == trained:
        return limit, f"it was trained for {trained:,}"
    if limit > trained:
        return limit, f"HOMEAI_CONTEXT's share per slot; the model was trained for {trained:,}"
    return limit, (
        f"its cache holds {n_cells:,} cells ({config.n_slots} slots of {config.n_ctx_seq:,}); "
        f"the model was trained for {trained:,}, which a larger HOMEAI_CONTEXT or HOMEAI_SLOTS would let it read"
    )


def _bytes_pointer(data: np.ndarray):
    return data.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))


class _Constraint:
    """A sequence's grammar sampler, and the candidate arrays it is applied to."""

    def __init__(self, grammar, n_vocab: int):
        self.grammar = grammar
        self.n_vocab = n_vocab
        self._ids = np.arange(n_vocab, dtype=np.int32)
        # llama_token_data is {int32 id; float logit; float p}: 12 bytes, as this packed dtype.
        self._data = np.zeros(n_vocab, dtype=[("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        self._one = (llama_cpp.llama_token_data * 1)()

    def pick(self, chain, logits, *, constrained: bool) -> int:
        """The token the chain picks among all candidates, or among those the grammar allows."""
        self._data["id"] = self._ids
        self._data["logit"] = np.ctypeslib.as_array(logits, shape=(self.n_vocab,))
        self._data["p"] = 0.0
        pointer = self._data.ctypes.data_as(llama_cpp.llama_token_data_p)
        candidates = llama_cpp.llama_token_data_array(pointer, self.n_vocab, -1, False)
        if constrained:
            llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
        llama_cpp.llama_sampler_apply(chain, ctypes.byref(candidates))
        return int(self._data["id"][candidates.selected])

    def allows(self, token: int) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 1.0, 0.0
        single = llama_cpp.llama_token_data_array(self._one, 1, -1, False)
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(single))
        return self._one[0].logit != float("-inf")


def sampler_chain(params: SamplingParams, *, n_vocab: int, penalties: bool = True):
    """llama.cpp's sampler chain for the settings: its penalties sampler (unless penalties is
    False: the runner applies a repeat penalty alone in place), then greedy, or top-k, top-p,
    min-p, temperature and a seeded draw. The caller frees it (llama_sampler_free)."""
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    add = llama_cpp.llama_sampler_chain_add
    values = (params.repeat_penalty, params.frequency_penalty, params.presence_penalty)
    if penalties and values != (1.0, 0.0, 0.0):
        add(chain, llama_cpp.llama_sampler_init_penalties(n_vocab, _RepeatPenalty.WINDOW, *values))
    if params.temperature <= 0:
        add(chain, llama_cpp.llama_sampler_init_greedy())
        return chain
    if params.top_k > 0:
        add(chain, llama_cpp.llama_sampler_init_top_k(params.top_k))
    if params.top_p < 1.0:
        add(chain, llama_cpp.llama_sampler_init_top_p(params.top_p, 1))
    if params.min_p > 0:
        add(chain, llama_cpp.llama_sampler_init_min_p(params.min_p, 1))
    add(chain, llama_cpp.llama_sampler_init_temp(params.temperature))
    add(chain, llama_cpp.llama_sampler_init_dist(params.seed if params.seed >= 0 else llama_cpp.LLAMA_DEFAULT_SEED))
    return chain


class _RepeatPenalty:
    """llama.cpp's penalties sampler when only its repeat penalty is on, applied to the logits in
    place before the rest of the chain. llama.cpp looks every token of the vocabulary up in its
    window (262,144 hash lookups a token for Gemma 3, about 0.9 ms on this CPU, as its header
    warns); this visits the window's tokens only. The arithmetic is the same float32 operations
    on the same values, so the rest of the chain sees the logits llama.cpp would have given it.
    With a frequency or presence penalty the chain keeps llama.cpp's sampler."""

    WINDOW = 64  # the last tokens sampled, as the chain's penalties sampler is set up

    def __init__(self, penalty: float):
        self.penalty = np.float32(penalty)
        self.window: collections.deque[int] = collections.deque(maxlen=self.WINDOW)

    def apply(self, logits: np.ndarray) -> None:
        if self.window:
            ids = np.fromiter(set(self.window), dtype=np.int64)
            values = logits[ids]
            logits[ids] = np.where(values <= 0, values * self.penalty, values / self.penalty)

    def accept(self, token: int) -> None:
        self.window.append(token)


class Runner:
    def __init__(self, config: RunnerConfig):
        self.config = config
        self.model = None
        self.ctx = None
        self.vocab = None
        self.n_vocab = 0
        self.info: ModelInfo | None = None
        self._batch = None
        self.prompts: PromptBuilder | None = None  # prompts in this model's chat format; set by load()
        self._samplers: dict[int, object] = {}
        self._argmax: set[int] = set()  # sequences sampled greedily without grammar (sample)
        self._penalties: dict[int, _RepeatPenalty] = {}  # repeat-only penalties, applied in place (sample)
        self._grammars: dict[int, _Constraint] = {}
        self._piece_buf = ctypes.create_string_buffer(256)
        self.load_notice = ""  # something the person should know about how the model runs
        self.slots = SlotCache()  # what each slot's KV cache holds, for prefix reuse
        self.n_cells = config.n_ctx_seq * config.n_slots  # the KV cache's cells (llama.cpp's, once loaded)
        self.n_ctx_max = config.n_ctx_seq  # the most one request may fill (set by load())
        self.kv = KVStore(ram_bytes=config.kv_ram_bytes, disk_bytes=config.kv_disk_bytes, folder=config.kv_dir)

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self.ctx is not None

    def load(self) -> ModelInfo:
        cfg = self.config
        path = Path(cfg.model_path)
        if not path.is_file():
            raise EngineError("model_missing", f"The model file {path} does not exist.")
        llama_cpp.llama_log_set(_llama_log, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        mparams = llama_cpp.llama_model_default_params()
        mparams.n_gpu_layers = cfg.n_gpu_layers
        self.load_notice = ""
        if cfg.n_gpu_layers != 0 and not llama_cpp.llama_supports_gpu_offload():
            self.load_notice = (
                f"{cfg.n_gpu_layers} GPU layers were asked for, but this build of llama.cpp has no GPU support "
                "(use the CUDA image): the model runs on the CPU."
            )
            log.warning(self.load_notice)
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), mparams)
        if not model:
            raise EngineError("model_unusable", f"llama.cpp could not load {path.name}: is it a valid GGUF file?")
        threads = cfg.n_threads or os.cpu_count() or 1
        cparams = llama_cpp.llama_context_default_params()
        cparams.n_seq_max = cfg.n_slots
        cparams.n_ctx = cfg.n_ctx_seq * cfg.n_slots
        cparams.n_batch = cfg.n_batch
        cparams.n_ubatch = cfg.n_batch
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.kv_unified = True  # slots share one cache
        # Keep the whole sliding-window cache: a cached prefix can then be reused from any
        # position (a trimmed SWA cache no longer holds the window before an old position).
        cparams.swa_full = True
        cparams.no_perf = True
        ctx = llama_cpp.llama_init_from_model(model, cparams)
        if not ctx:
            llama_cpp.llama_model_free(model)
            raise EngineError("model_unusable", f"llama.cpp could not create a context for {path.name}.")
        self.model, self.ctx = model, ctx
        self.vocab = llama_cpp.llama_model_get_vocab(model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        self._batch = llama_cpp.llama_batch_init(cfg.n_batch, 0, 1)
        source = llama_cpp.llama_model_chat_template(model, None)
        template = None
        if source:
            template = ChatTemplate(
                source.decode("utf-8", errors="replace"),
                bos=self._token_text(llama_cpp.llama_vocab_bos(self.vocab)),
                eos=self._token_text(llama_cpp.llama_vocab_eos(self.vocab)),
            )
        add_bos = llama_cpp.llama_vocab_get_add_bos(self.vocab)
        bos_token = int(llama_cpp.llama_vocab_bos(self.vocab)) if add_bos else None
        n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(model))
        self.n_cells = int(llama_cpp.llama_n_ctx(ctx))
        self.n_ctx_max, why = request_limit(cfg, n_cells=self.n_cells, n_ctx_train=n_ctx_train)
        self.prompts = PromptBuilder(self, template, n_ctx=self.n_ctx_max, bos_token=bos_token, why=why)
        desc = ctypes.create_string_buffer(256)
        llama_cpp.llama_model_desc(model, desc, len(desc))
        self.info = ModelInfo(
            name=path.name,
            path=str(path),
            size_bytes=int(llama_cpp.llama_model_size(model)),
            n_params=int(llama_cpp.llama_model_n_params(model)),
            description=desc.value.decode("utf-8", errors="replace"),
            chat_template=template is not None,
            n_ctx_train=n_ctx_train,
            n_layers=int(llama_cpp.llama_model_n_layer(model)),
        )
        log.info(
            "loaded %s (%s), %d threads, %d slots x %d ctx, %d cells, up to %d per request",
            path.name,
            self.info.description,
            threads,
            cfg.n_slots,
            cfg.n_ctx_seq,
            self.n_cells,
            self.n_ctx_max,
        )
        return self.info

    def close(self) -> None:
        self.kv.clear()
        for seq_id in list(self._samplers):
            self.free_sampler(seq_id)
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx:
            llama_cpp.llama_free(self.ctx)
            self.ctx = None
        if self.model:
            llama_cpp.llama_model_free(self.model)
            self.model = None

    # --- text --------------------------------------------------------------------------------
    def tokenize(self, text: str, *, add_special: bool = True, parse_special: bool = True) -> list[int]:
        data = text.encode("utf-8")
        n_max = len(data) + 16
        buf = (llama_cpp.llama_token * n_max)()
        n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, n_max, add_special, parse_special)
        if n < 0:
            buf = (llama_cpp.llama_token * -n)()
            n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, -n, add_special, parse_special)
        return list(buf[:n])

    def piece(self, token: int) -> bytes:
        n = llama_cpp.llama_token_to_piece(self.vocab, token, self._piece_buf, len(self._piece_buf), 0, False)
        if n < 0:
            big = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, big, len(big), 0, False)
            return big.raw[:n]
        return self._piece_buf.raw[:n]

    def is_eog(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return llama_cpp.llama_vocab_get_text(self.vocab, token).decode("utf-8", errors="replace")

    # --- sampling ----------------------------------------------------------------------------
    def new_sampler(self, seq_id: int, params: SamplingParams, grammar: Grammar | None = None) -> None:
        """The sequence's sampler chain (penalties, then greedy or top-k / top-p / min-p /
        temperature), and its grammar beside it (see sample)."""
        self.free_sampler(seq_id)
        if grammar is not None:
            constraint = self._grammar_sampler(grammar)
            if not constraint:
                raise EngineError(
                    "invalid_schema", "llama.cpp could not parse the grammar built from this request's schema or tools."
                )
            self._grammars[seq_id] = _Constraint(constraint, self.n_vocab)
        in_place = params.frequency_penalty == 0.0 and params.presence_penalty == 0.0 and grammar is None
        if in_place and params.repeat_penalty != 1.0:
            self._penalties[seq_id] = _RepeatPenalty(params.repeat_penalty)
        if params.temperature <= 0 and grammar is None:
            self._argmax.add(seq_id)
        chain = sampler_chain(params, n_vocab=self.n_vocab, penalties=not in_place)
        self._samplers[seq_id] = chain

    def _grammar_sampler(self, grammar: Grammar):
        text = grammar.text.encode()
        if grammar.trigger is None:
            return llama_cpp.llama_sampler_init_grammar(self.vocab, text, b"root")
        patterns = (ctypes.c_char_p * 1)(grammar.trigger.encode())
        return llama_cpp.llama_sampler_init_grammar_lazy_patterns(self.vocab, text, b"root", patterns, 1, None, 0)

    def free_sampler(self, seq_id: int) -> None:
        self._argmax.discard(seq_id)
        self._penalties.pop(seq_id, None)
        chain = self._samplers.pop(seq_id, None)
        if chain is not None:
            llama_cpp.llama_sampler_free(chain)
        constraint = self._grammars.pop(seq_id, None)
        if constraint is not None:
            llama_cpp.llama_sampler_free(constraint.grammar)

    def sample(self, seq: Sequence, batch_index: int) -> int:
        """The next token. Under a grammar, llama.cpp's own order (common_sampler): sample as if
        free, keep the token when the grammar allows it, else sample again among the tokens it
        allows; most tokens pass, so the grammar checks one token rather than the vocabulary."""
        penalty = self._penalties.get(seq.seq_id)
        if penalty is not None or seq.seq_id in self._argmax:
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx, batch_index), shape=(self.n_vocab,))
            if penalty is not None:
                penalty.apply(logits)  # in llama.cpp's own buffer, which the chain reads next
            if seq.seq_id in self._argmax:
                # Greedy: the first highest logit, as llama.cpp's greedy sampler picks it, read in
                # place. llama_sampler_sample would first copy all the vocabulary's logits into a
                # candidate array (262,144 entries for Gemma 3: a quarter of a millisecond a token).
                token = int(logits.argmax())
            else:
                token = int(llama_cpp.llama_sampler_sample(self._samplers[seq.seq_id], self.ctx, batch_index))
            if penalty is not None:
                penalty.accept(token)
            return token
        chain = self._samplers[seq.seq_id]
        constraint = self._grammars.get(seq.seq_id)
        if constraint is None:
            return int(llama_cpp.llama_sampler_sample(chain, self.ctx, batch_index))
        logits = llama_cpp.llama_get_logits_ith(self.ctx, batch_index)
        token = constraint.pick(chain, logits, constrained=False)
        if not constraint.allows(token):
            token = constraint.pick(chain, logits, constrained=True)
        llama_cpp.llama_sampler_accept(constraint.grammar, token)
        llama_cpp.llama_sampler_accept(chain, token)
        return token

    # --- execution ---------------------------------------------------------------------------
    def decode(self, step: Step) -> list[tuple[Sequence, int, tuple[int, ...]]]:
        """Run one llama_decode for the step; returns what to sample: (sequence, batch index of
        its first logits, its draft). A decode with a draft has logits at every position: the
        last token's predicts draft[0], draft[0]'s predicts draft[1], and so on."""
        batch = self._batch
        i = 0
        to_sample: list[tuple[Sequence, int, tuple[int, ...]]] = []
        for chunk in step.chunks:
            seq = chunk.seq
            if chunk.prefill:
                start = seq.num_computed
                tokens = seq.prompt_tokens[start : start + chunk.n_tokens]
                n_logits = 1 if start + chunk.n_tokens == seq.prompt_len else 0
            else:
                start = seq.position
                tokens = [seq.output_tokens[-1], *chunk.draft]
                n_logits = len(tokens)
            for k, token in enumerate(tokens):
                batch.token[i] = token
                batch.pos[i] = start + k
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq.slot
                batch.logits[i] = k >= len(tokens) - n_logits
                i += 1
            if n_logits:
                to_sample.append((seq, i - n_logits, chunk.draft))
        batch.n_tokens = i
        rc = llama_cpp.llama_decode(self.ctx, batch)
        if rc != 0:
            raise EngineError("decode_failed", f"llama.cpp could not evaluate the batch (code {rc}).")
        return to_sample

    def logits(self, batch_index: int) -> np.ndarray:
        return np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(self.ctx, batch_index), shape=(self.n_vocab,)
        ).copy()

    # --- KV slots ------------------------------------------------------------------------------
    def admit(self, seq: Sequence, free_slots: list[int], cache_room: int | None = None) -> int:
        """Start the sequence in the free slot whose cache it can reuse most of (SlotCache.choose),
        or restore its conversation's saved state there when that holds more (kvstore.py); keep
        the slot's cells first if they are someone's history this sequence would overwrite; drop
        the rest of the slot's cache, and mark the reused prefix as computed. With a KV store the
        other free slots' histories move into it and out of the cache; without one their caches
        are cut to `cache_room` cells, least recently used first (the scheduler's reservations:
        Scheduler's docstring)."""
        slot, reuse = self.slots.choose(free_slots, seq.prompt_tokens, seq.owner)
        if self.kv.enabled:
            # The other idle slots' histories go to the KV store (the engine offers it each one
            # while it waits, save_idle) and leave the cache: llama.cpp's graph spans every used
            # cell, and its CPU flash attention pays for another sequence's masked cells in
            # every prompt slice (it reads each tile's mask before skipping it). Measured on the
            # default chat model, 2 threads: the first 512 tokens of a prompt took 398 ms in an
            # empty cache and 656 / 751 ms beside one / two idle histories of ~2,850 tokens;
            # restoring a history is one copy. llama-server does the same with its unified cache
            # (idle slots saved to its prompt cache and cleared when a task starts).
            self._evict([s for s in free_slots if s != slot], 0)
        elif cache_room is not None:
            self._evict([s for s in free_slots if s != slot], cache_room)
        mem = llama_cpp.llama_get_memory(self.ctx)
        held, owner = self.slots.held(slot)
        if reuse < self.kv.min_tokens and self.kv.worth_keeping(held) and not self.slots.offered(slot):
            self._save(slot, held, owner)
        saved, common = self.kv.best(seq.owner, seq.prompt_tokens) if self.kv.enabled else (None, 0)
        restorable = min(common, seq.prompt_len - 1)  # one prompt token must run, for logits
        if saved is not None and restorable > reuse + RESTORE_MARGIN and self._restore(slot, saved):
            reuse, seq.num_restored = restorable, restorable
        elif saved is not None and common == len(saved.tokens) <= reuse:
            # The conversation is back in its own slot, which holds all the saved state does (the
            # idle engine's copy): the copy would only take the room of someone else's.
            self.kv.drop(saved)
        if reuse <= 0 or not llama_cpp.llama_memory_seq_rm(mem, slot, reuse, -1):
            llama_cpp.llama_memory_seq_rm(mem, slot, -1, -1)
            reuse = seq.num_restored = 0
        seq.num_computed = seq.num_cached = reuse
        self.slots.take(slot)
        return slot

    def _evict(self, idle: list[int], room: int) -> None:
        """Drop the caches of idle slots, least recently used first, until those left hold at
        most `room` cells; a history worth keeping goes to the KV store first."""
        mem = llama_cpp.llama_get_memory(self.ctx)
        for slot in self.slots.eviction_order(idle, room):
            held, owner = self.slots.held(slot)
            if self.kv.worth_keeping(held) and not self.slots.offered(slot):
                self._save(slot, held, owner)
            llama_cpp.llama_memory_seq_rm(mem, slot, -1, -1)
            self.slots.clear(slot)

    def save_idle(self) -> bool:
        """Offer the KV store one free slot's history; False when none is left to offer. The
        engine calls this while it has nothing to do, so that the request which next takes the
        slot starts at once: otherwise admit copies the history out first, a millisecond or two
        (KV cells of 150 tokens of Gemma 3 270M) on that request's time to first token."""
        if not self.kv.enabled or self.ctx is None:
            return False
        for slot in self.slots.not_offered():
            held, owner = self.slots.held(slot)
            self.slots.mark_offered(slot)
            if self.kv.worth_keeping(held):
                self._save(slot, held, owner)
                return True
        return False

    def _save(self, slot: int, tokens: list[int], owner: object) -> None:
        """Copy a slot's KV cells (the history they hold) into the store."""
        size = llama_cpp.llama_state_seq_get_size(self.ctx, slot)
        if size <= 0:
            return
        data = np.empty(size, dtype=np.uint8)  # not zero-filled: a ctypes array of 44 MB takes 80 ms to clear
        written = llama_cpp.llama_state_seq_get_data(self.ctx, _bytes_pointer(data), size, slot)
        if written != size:
            return
        n_in_kv = llama_cpp.llama_memory_seq_pos_max(llama_cpp.llama_get_memory(self.ctx), slot) + 1
        self.kv.put(owner, tokens[:n_in_kv], data)

    def _restore(self, slot: int, saved) -> bool:
        """Load a saved state into the (emptied) slot; False when llama.cpp refuses it."""
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self.ctx), slot, -1, -1)
        data = self.kv.take(saved)
        if llama_cpp.llama_state_seq_set_data(self.ctx, _bytes_pointer(data), data.size, slot) != data.size:
            llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self.ctx), slot, -1, -1)
            return False
        return True

    def discard(self, seq: Sequence, start: int) -> None:
        """Drop the sequence's KV cells from position `start` on (a draft's rejected tokens)."""
        if not llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self.ctx), seq.slot, start, -1):
            raise EngineError("decode_failed", "llama.cpp could not drop a rejected draft from this answer's cache.")

    def release(self, seq: Sequence, *, keep_cache: bool = True) -> None:
        """Free the sequence's sampler; its KV cells stay as the slot's cache (or are dropped)."""
        self.free_sampler(seq.seq_id)
        if seq.slot is None or self.ctx is None:
            return
        mem = llama_cpp.llama_get_memory(self.ctx)
        if keep_cache:
            n_in_kv = llama_cpp.llama_memory_seq_pos_max(mem, seq.slot) + 1
            self.slots.keep(seq.slot, (seq.prompt_tokens + seq.output_tokens)[:n_in_kv], seq.owner)
        else:
            llama_cpp.llama_memory_seq_rm(mem, seq.slot, -1, -1)
            self.slots.clear(seq.slot)
