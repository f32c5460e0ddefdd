"""Reading aloud's time to first audio, in process, through the worker's own path: an answer's
tokens cut into sentences (speech.SpeechFeed, into Redis), followed by a reading
(speech.sentences, from Redis) that makes each WAV with the bundled Piper voice and keeps it in
Redis; the figure is the one the dashboard shows: from the first sentence's end to its audio.

Two cases, interleaved: "alone", an answer whose tokens come at a decode's pace with no model
running (the voice has the CPU to itself), and "decoding", the real chat model writing the
answer in this process at the same time (the voice shares the CPU with the engine, as on a
worker)."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from bench.report import machine, num, table, write_json
from inference import redis_client, speech
from inference.engine.budget import StepCostModel
from inference.engine.engine import Engine
from inference.engine.events import DoneEvent, ErrorEvent, TokenEvent
from inference.engine.runner import Runner, RunnerConfig
from inference.engine.scheduler import Scheduler
from inference.engine.sequence import SamplingParams, Sequence
from inference.engine.timing import PhaseClock, now_ns

CASES = ("alone", "decoding")
PROMPTS = (
    "Tell me about the sea.",
    "How do I keep basil alive indoors?",
    "Why is the sky blue?",
    "Give me three tips for sleeping better.",
    "What should I pack for a weekend of hiking?",
)
# An answer's pace with no model: about what the chat model decodes on a 2-core box.
TOKEN_GAP_S = 0.04
BENCH_ID = -4200  # answer ids of the bench's Redis keys: below any real answer's


@dataclass(frozen=True)
class SpeechConfig:
    model_path: Path
    rounds: int = 5
    threads: int = 0
    max_tokens: int = 96


def _engine(cfg: SpeechConfig) -> Engine:
    config = RunnerConfig(model_path=cfg.model_path, n_ctx_seq=2048, n_slots=1, n_batch=512, n_threads=cfg.threads)
    scheduler = Scheduler(policy="chunked", n_slots=1, n_batch=512, token_budget=512)
    return Engine(runner=Runner(config), scheduler=scheduler, cost_model=StepCostModel(None))


def _answer_tokens(engine: Engine, prompt: str, max_tokens: int):
    seq = Sequence(
        seq_id=int(time.monotonic_ns() % 2**31),
        messages=[{"role": "user", "content": prompt}],
        params=SamplingParams(max_tokens=max_tokens, temperature=0.0),
        clock=PhaseClock(t_arrive=now_ns()),
        owner=1,
    )
    engine.submit(seq)
    while True:
        event = seq.events.get(timeout=900)
        if isinstance(event, ErrorEvent):
            raise RuntimeError(f"{event.code}: {event.message}")
        if isinstance(event, DoneEvent):
            return
        if isinstance(event, TokenEvent):
            yield event.text


def _paced(text: str):
    for i, word in enumerate(text.split(" ")):
        time.sleep(TOKEN_GAP_S)
        yield word if i == 0 else " " + word


def _read_once(answer_id: int, tokens) -> dict:
    """Stream the tokens through the feed while a reading follows them; the reading's figures."""
    client = redis_client.client()
    client.delete(redis_client.speech_text_key(answer_id))
    result: dict = {}

    def reader() -> None:
        try:
            follow()
        except Exception as exc:  # raised in the bench's thread, after the join
            result["error"] = exc

    def follow() -> None:
        for index, (sentence, ended_at) in enumerate(
            speech.sentences(SimpleNamespace(id=answer_id), written=lambda _id: False)
        ):
            if not speech.readable(sentence):
                continue
            audio = speech.synthesize(sentence)
            client.set(redis_client.speech_audio_key(answer_id, index), audio, ex=60)
            if "first_audio_ms" not in result:
                result["first_audio_ms"] = (time.time() - ended_at) * 1000
                result["first_sentence_chars"] = len(sentence)
            result["sentences"] = index + 1

    thread = threading.Thread(target=reader)
    thread.start()
    feed = speech.SpeechFeed(answer_id)
    for piece in tokens:
        feed.feed(piece)
        feed.flush()
    feed.flush(end=True)
    thread.join()
    if "error" in result:
        raise result["error"]
    return result


def run(cfg: SpeechConfig, log=print) -> dict:
    started = time.perf_counter()
    speech.voice()
    load_s = time.perf_counter() - started
    engine = _engine(cfg)
    samples: dict[str, list[dict]] = {case: [] for case in CASES}
    try:
        list(_answer_tokens(engine, "Hi", 4))  # the model loaded first
        answer_id = BENCH_ID
        for r in range(cfg.rounds):
            prompt = PROMPTS[r % len(PROMPTS)]
            text = "".join(_answer_tokens(engine, prompt, cfg.max_tokens))  # the same words, alone
            for case in CASES:
                answer_id -= 1
                tokens = _paced(text) if case == "alone" else _answer_tokens(engine, prompt, cfg.max_tokens)
                samples[case].append(_read_once(answer_id, tokens))
            log(
                f"round {r + 1}/{cfg.rounds}: "
                + ", ".join(f"{c} {samples[c][-1]['first_audio_ms']:.0f} ms" for c in CASES)
            )
    finally:
        engine.stop()
    summary = {
        case: {
            "first_audio_ms_p50": statistics.median(s["first_audio_ms"] for s in rows),
            "first_audio_ms_max": max(s["first_audio_ms"] for s in rows),
            "first_sentence_chars_p50": statistics.median(s["first_sentence_chars"] for s in rows),
        }
        for case, rows in samples.items()
    }
    return {
        "machine": machine(model=cfg.model_path.name, threads=cfg.threads, voice=speech.voice_path().name),
        "voice_load_s": load_s,
        "rounds": cfg.rounds,
        "summary": summary,
        "samples": samples,
    }


def markdown(result: dict) -> str:
    rows = [
        (case, num(s["first_sentence_chars_p50"]), num(s["first_audio_ms_p50"]), num(s["first_audio_ms_max"]))
        for case, s in result["summary"].items()
    ]
    header = ("case", "first sentence (chars, p50)", "first audio p50 (ms)", "first audio max (ms)")
    return "\n".join(table(header, rows)) + f"\n\nVoice load: {result['voice_load_s']:.2f} s."


def write(result: dict, out_dir: Path) -> Path:
    return write_json(result, out_dir, "speech")
