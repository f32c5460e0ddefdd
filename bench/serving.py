"""Serving benchmark: OpenAI-compatible servers and the raw engine, measured side by side.

After vLLM's benchmark_serving: streaming requests with prompts of a controlled length, at a
fixed concurrency (or a Poisson request rate), timed at the client. For each target it
reports TTFT, TPOT (first token excluded), ITL (every gap, pooled over requests) and
end-to-end latency (mean, p50, p90, p99), output tokens/s, requests/s and goodput.

Targets run interleaved: each round sends the same prompts to every target, in an order
that rotates, so a noisy neighbour on a shared machine hurts all of them alike.

The "raw" target is llama-cpp-python's `Llama.generate` loop in this process, with the same
model and threads, one request at a time: the ceiling no server on this box can beat. The
"llama-server" target is llama.cpp's own server (`make llama-server`), started with the same
model, threads, slots, context per slot and batch as HomeAI's worker: the peer to match.

Beside the client's clock: each server's own `timings` (its TTFT and how far the client's is
above it), whether the tokens a server counts equal the chunks that carried text, and, for
targets with process ids, their CPU time per streamed token (from /proc, the whole stack's).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
import llama_cpp
import plotly.graph_objects as go

from bench.report import figure, machine, num, percentile, table, write

RAW = "raw"
LLAMA_SERVER = "llama-server"
LLAMA_SERVER_BIN = Path(__file__).resolve().parent.parent / "build" / "llama.cpp" / "bin" / "llama-server"
SLO_NAMES = ("ttft_ms", "tpot_ms", "e2e_ms")
PERCENTILES = (50, 90, 99)

# Plain words for synthetic prompts: unrelated words make every prompt different from its
# first token on, so no server can reuse a cached prefix between requests.
WORDS = (
    "river stone garden window letter summer market winter engine silver planet harbor forest candle "
    "bridge meadow pocket thunder library mirror village orchard lantern compass island ribbon "
    "mountain kettle violin feather canyon blanket station pepper castle tunnel comet pillow "
    "glacier theatre marble copper saddle velvet anchor beacon cellar cotton dragon falcon "
    "garlic hammer jungle ladder magnet needle oyster parrot quartz rocket shadow timber "
    "umbrella valley walnut yellow zebra basket cactus desert emerald fountain gravel helmet "
    "iceberg jacket kitten lemon mango nectar olive puzzle quiver raven sponge tiger "
    "the a of and to in is was for on with as at by from"
).split()


# --- configuration ------------------------------------------------------------------------------


@dataclass
class Target:
    name: str
    url: str | None = None  # an OpenAI-compatible base URL ending in /v1; None for the raw engine
    api_key: str | None = None
    pids: tuple[int, ...] = ()  # the processes serving it: their CPU time is counted per token

    @property
    def is_raw(self) -> bool:
        return self.url is None


@dataclass
class ServingConfig:
    targets: list[Target]
    model_path: Path
    threads: int
    n_ctx: int = 4096
    endpoint: str = "completions"  # or "chat"
    prompt_tokens: int = 128
    output_tokens: int = 64
    num_prompts: int = 16
    rounds: int = 4
    concurrency: tuple[int, ...] = (1,)
    request_rate: float = math.inf
    seed: int = 0
    goodput: dict[str, float] = field(default_factory=dict)
    tokenizer: str = "model"  # or "words"
    model_id: str | None = None
    timeout_s: float = 600.0
    warmup: bool = True
    cotenant_doc_tokens: int = 0  # > 0: also three chats beside one document of this many tokens
    cotenant_chat_tokens: int = 256  # what each co-tenant chat writes: enough to outlast the document
    long_prompt_tokens: int = 0  # > 0: also one prompt of this many tokens at a time, then its decode


def parse_goodput(text: str | None) -> dict[str, float]:
    """ "ttft_ms=500,tpot_ms=50" -> {"ttft_ms": 500.0, "tpot_ms": 50.0}."""
    limits: dict[str, float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in SLO_NAMES:
            raise ValueError(f"Unknown goodput limit {name!r}; use {', '.join(SLO_NAMES)}.")
        try:
            limits[name] = float(value)
        except ValueError:
            raise ValueError(f"The goodput limit {name} needs a number of milliseconds, not {value!r}.") from None
    return limits


def parse_pids(text: str, names: list[str]) -> tuple[str, tuple[int, ...]]:
    """ "homeai=812,813,90" -> ("homeai", (812, 813, 90)): the processes whose CPU a target uses."""
    name, sep, ids = text.partition("=")
    name = name.strip()
    try:
        pids = tuple(int(p) for p in ids.split(",") if p.strip())
    except ValueError:
        pids = ()
    if not sep or not pids or min(pids) < 1:
        raise ValueError(f"Process ids are given as NAME=PID[,PID...], e.g. homeai=812,813 (got {text!r}).")
    if name not in names:
        raise ValueError(f"--cpu {text}: there is no target named {name!r} (targets: {', '.join(names) or 'none'}).")
    return name, pids


def cpu_by_process(pids: tuple[int, ...]) -> dict[str, float]:
    """User + system CPU seconds of each process (all its threads) so far, from /proc, by
    "name pid" (the name is the process's comm: daphne, celery, redis-server...)."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            comm, _, rest = f.read().partition("(")[2].rpartition(")")
        fields = rest.split()
        out[f"{comm} {pid}"] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (14, 15 in proc(5))
    return out


def cpu_seconds(pids: tuple[int, ...]) -> float:
    """User + system CPU time of these processes together so far."""
    return sum(cpu_by_process(pids).values())


def parse_target(text: str) -> Target:
    """ "raw", or "NAME=URL" (URL: an OpenAI-compatible base URL such as http://127.0.0.1:8000/v1)."""
    if text.strip() == RAW:
        return Target(name=RAW)
    name, sep, url = text.partition("=")
    if not sep or not name.strip() or not url.startswith(("http://", "https://")):
        raise ValueError(f"A target is 'raw' or NAME=URL, e.g. homeai=http://127.0.0.1:8000/v1 (got {text!r}).")
    return Target(name=name.strip(), url=url.rstrip("/"))


# --- prompts ---------------------------------------------------------------------------------


class Tokenizer:
    """Counts tokens with the model's own vocabulary (no weights loaded), or counts words."""

    def __init__(self, model_path: Path, kind: str = "model"):
        self.kind = kind
        self._llm = None
        if kind == "model":
            self._llm = llama_cpp.Llama(model_path=str(model_path), vocab_only=True, verbose=False)

    def encode(self, text: str) -> list[int]:
        if self._llm is None:
            return list(range(len(text.split())))
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def decode(self, tokens: list[int]) -> str:
        return self._llm.detokenize(tokens).decode("utf-8", errors="ignore")

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def cut(self, text: str, n: int) -> str:
        if self._llm is None:
            return " ".join(text.split()[:n])
        return self.decode(self.encode(text)[:n])


def make_prompts(tokenizer: Tokenizer, *, n: int, length: int, seed: int) -> list[str]:
    """n different prompts of `length` tokens each (random words, reproducible from the seed)."""
    rng = random.Random(seed)
    prompts = []
    for i in range(n):
        words = [f"{i}."]
        while tokenizer.count(" ".join(words)) < length:
            words += rng.choices(WORDS, k=max(8, length // 4))
        prompts.append(tokenizer.cut(" ".join(words), length))
    return prompts


# --- one request --------------------------------------------------------------------------------


@dataclass
class RequestResult:
    target: str
    ok: bool
    error: str = ""
    prompt_tokens: int = 0
    output_tokens: int = 0
    ttft_s: float | None = None
    e2e_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    text: str = ""
    server_timings: dict | None = None
    text_chunks: int = 0  # stream chunks that carried text
    counted_tokens: int | None = None  # what the server said it sent (usage.completion_tokens)
    sent_s: float | None = None  # the client's clock (perf_counter) when the request went out

    def token_times(self) -> list[float]:
        """When each token arrived, on the client's clock (empty without a first token)."""
        if self.sent_s is None or self.ttft_s is None:
            return []
        times = [self.sent_s + self.ttft_s]
        for gap in self.itl_s:
            times.append(times[-1] + gap)
        return times

    @property
    def server_ttft_ms(self) -> float | None:
        """The server's own TTFT: HomeAI's ttft_ms; llama-server has none, its prompt_ms (prompt
        start to the first token sampled) is the nearest."""
        t = self.server_timings or {}
        return t.get("ttft_ms") if t.get("ttft_ms") is not None else t.get("prompt_ms")

    @property
    def tpot_s(self) -> float | None:
        if self.output_tokens < 2 or self.ttft_s is None or self.e2e_s is None:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)


def request_body(cfg: ServingConfig, prompt: str, max_tokens: int | None = None) -> dict:
    body: dict = {
        "max_tokens": max_tokens or cfg.output_tokens,
        "temperature": 0,
        "repeat_penalty": 1.0,  # llama.cpp's extension; greedy and unpenalised everywhere
        "ignore_eos": True,  # same output length for every request (servers that ignore it may stop early)
        "seed": cfg.seed,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if cfg.model_id:
        body["model"] = cfg.model_id
    if cfg.endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


def chunk_text(data: dict, chat: bool) -> str:
    choices = data.get("choices") or []
    if not choices:
        return ""
    if chat:
        return (choices[0].get("delta") or {}).get("content") or ""
    return choices[0].get("text") or ""


async def http_request(
    client,
    target: Target,
    cfg: ServingConfig,
    prompt: str,
    tokenizer: Tokenizer,
    *,
    max_tokens: int | None = None,
    on_token: Callable[[], None] | None = None,
) -> RequestResult:
    """One streamed request, timed at the client: a token is a chunk that carries text
    (on_token is called at each)."""
    chat = cfg.endpoint == "chat"
    path = "/chat/completions" if chat else "/completions"
    headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    headers["X-Client-Name"] = "bench_serving"
    result = RequestResult(target=target.name, ok=False, prompt_tokens=tokenizer.count(prompt) + 1)
    pieces: list[str] = []
    times: list[float] = []
    usage = None
    start = result.sent_s = time.perf_counter()
    body = request_body(cfg, prompt, max_tokens)
    try:
        async with client.stream(
            "POST", target.url + path, json=body, headers=headers, timeout=cfg.timeout_s
        ) as response:
            if response.status_code != 200:
                body = (await response.aread()).decode("utf-8", errors="replace")
                result.error = f"HTTP {response.status_code}: {body[:300]}"
                return result
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                data = json.loads(payload)
                if "error" in data:
                    result.error = str(data["error"].get("message", data["error"]))
                    return result
                now = time.perf_counter()
                text = chunk_text(data, chat)
                if text:
                    pieces.append(text)
                    times.append(now)
                    if on_token is not None:
                        on_token()
                if data.get("usage"):
                    usage = data["usage"]
                if data.get("timings"):
                    result.server_timings = data["timings"]
    except Exception as exc:  # a failed request is a result, not the end of the run
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    end = time.perf_counter()
    result.text = "".join(pieces)
    if not times:
        result.error = "no text came back"
        return result
    result.ok = True
    result.ttft_s = times[0] - start
    result.e2e_s = end - start
    result.itl_s = [b - a for a, b in zip(times, times[1:], strict=False)]
    result.text_chunks = len(times)
    if usage and usage.get("completion_tokens"):
        result.output_tokens = result.counted_tokens = int(usage["completion_tokens"])
    elif tokenizer.kind == "model":
        result.output_tokens = max(tokenizer.count(result.text), len(times))
    else:
        result.output_tokens = len(times)
    return result


class RawEngine:
    """llama-cpp-python's high-level `Llama.generate` loop in this process, one request at a time."""

    def __init__(self, cfg: ServingConfig):
        self.llm = llama_cpp.Llama(
            model_path=str(cfg.model_path),
            n_ctx=cfg.n_ctx,
            n_batch=512,
            n_threads=cfg.threads,
            n_threads_batch=cfg.threads,
            verbose=False,
        )
        # One thread: a llama.cpp context serves one caller at a time; later requests queue.
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="raw-engine")

    def _is_eog(self, token: int) -> bool:
        try:
            return bool(llama_cpp.llama_vocab_is_eog(self.llm._model.vocab, token))
        except AttributeError:
            return token == self.llm.token_eos()

    def _run(self, prompt: str, max_tokens: int, chat: bool, start: float, on_token) -> RequestResult:
        result = RequestResult(target=RAW, ok=False, sent_s=start)
        if chat:
            prompt = f"<start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n"
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        result.prompt_tokens = len(tokens)
        times: list[float] = []
        for token in self.llm.generate(tokens, temp=0.0, repeat_penalty=1.0, reset=True):
            now = time.perf_counter()
            if self._is_eog(token):
                break
            times.append(now)
            if on_token is not None:
                on_token()
            if len(times) >= max_tokens:
                break
        end = time.perf_counter()
        if not times:
            result.error = "no tokens"
            return result
        result.ok = True
        result.output_tokens = len(times)
        result.ttft_s = times[0] - start
        result.e2e_s = end - start
        result.itl_s = [b - a for a, b in zip(times, times[1:], strict=False)]
        return result

    async def request(
        self,
        cfg: ServingConfig,
        prompt: str,
        *,
        max_tokens: int | None = None,
        on_token: Callable[[], None] | None = None,
    ) -> RequestResult:
        start = time.perf_counter()  # before the queue: waiting for the engine is part of TTFT
        loop = asyncio.get_running_loop()
        ping = None if on_token is None else (lambda: loop.call_soon_threadsafe(on_token))
        return await loop.run_in_executor(
            self.pool, self._run, prompt, max_tokens or cfg.output_tokens, cfg.endpoint == "chat", start, ping
        )

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.llm.close()


# --- load patterns ------------------------------------------------------------------------------


def arrival_gaps(n: int, rate: float, rng: random.Random) -> list[float]:
    """Seconds between sends: Poisson arrivals at `rate` per second, or all at once (inf)."""
    if not math.isfinite(rate) or rate <= 0:
        return [0.0] * n
    return [0.0] + [rng.expovariate(rate) for _ in range(n - 1)]


async def drive(
    send: Callable, prompts: list[str], *, concurrency: int, gaps: list[float]
) -> tuple[float, list[RequestResult]]:
    """Send every prompt after its gap, at most `concurrency` in flight; the wall time and results."""
    limit = asyncio.Semaphore(max(concurrency, 1))
    tasks = []
    start = time.perf_counter()

    async def one(prompt: str) -> RequestResult:
        async with limit:
            return await send(prompt)

    for prompt, gap in zip(prompts, gaps, strict=True):
        if gap:
            await asyncio.sleep(gap)
        tasks.append(asyncio.create_task(one(prompt)))
    results = await asyncio.gather(*tasks)
    return time.perf_counter() - start, list(results)


# --- statistics ---------------------------------------------------------------------------------


def _stats(values: list[float]) -> dict:
    mean = statistics.fmean(values) if values else None
    return {"mean": mean, **{f"p{p}": percentile(values, p) for p in PERCENTILES}}


def meets(result: RequestResult, limits: dict[str, float]) -> bool:
    if not result.ok:
        return False
    values = {
        "ttft_ms": result.ttft_s * 1000,
        "tpot_ms": None if result.tpot_s is None else result.tpot_s * 1000,
        "e2e_ms": result.e2e_s * 1000,
    }
    return all(values[name] is None or values[name] <= limit for name, limit in limits.items())


def summarize(results: list[RequestResult], duration_s: float, limits: dict[str, float]) -> dict:
    """vLLM's definitions: TPOT per request excludes the first token; ITL pools every gap."""
    ok = [r for r in results if r.ok]
    output = sum(r.output_tokens for r in ok)
    good = sum(1 for r in ok if meets(r, limits)) if limits else None
    server_ttft = [r.server_ttft_ms for r in ok if r.server_ttft_ms is not None]
    return {
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "errors": sorted({r.error for r in results if not r.ok})[:5],
        "duration_s": duration_s,
        "prompt_tokens_mean": _stats([r.prompt_tokens for r in ok])["mean"],
        "output_tokens_total": output,
        "output_tokens_mean": output / len(ok) if ok else None,
        "output_tps": output / duration_s if duration_s > 0 else None,
        "request_rps": len(ok) / duration_s if duration_s > 0 else None,
        "goodput_rps": good / duration_s if good is not None and duration_s > 0 else None,
        "goodput_share": good / len(results) if good is not None and results else None,
        "ttft_ms": _stats([r.ttft_s * 1000 for r in ok]),
        "tpot_ms": _stats([r.tpot_s * 1000 for r in ok if r.tpot_s is not None]),
        "itl_ms": _stats([gap * 1000 for r in ok for gap in r.itl_s]),
        "e2e_ms": _stats([r.e2e_s * 1000 for r in ok]),
        "server_ttft_ms_mean": _stats(server_ttft)["mean"],
        "server_ttft_ms": _stats(server_ttft),
        # Per request, how far the client's TTFT is above the server's own (on loopback: the
        # part of the wait the server does not see).
        "ttft_client_minus_server_ms": _stats(
            [r.ttft_s * 1000 - r.server_ttft_ms for r in ok if r.server_ttft_ms is not None]
        ),
        "tokens_counted": sum(1 for r in ok if r.counted_tokens is not None),
        "tokens_match": sum(1 for r in ok if r.counted_tokens is not None and r.counted_tokens == r.text_chunks),
    }


# --- the run ----------------------------------------------------------------------------------


async def _run_async(
    cfg: ServingConfig,
    prompts: list[str],
    docs: list[str],
    longs: list[str],
    tokenizer: Tokenizer,
    raw: RawEngine | None,
    log,
) -> list[dict]:
    limits = httpx.Limits(max_connections=max(cfg.concurrency) * 2 + 4, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=cfg.timeout_s) as client:

        def sender(target: Target):
            """send(prompt, max_tokens=None, on_token=None) -> RequestResult, for the target."""
            if target.is_raw:
                return lambda prompt, **kw: raw.request(cfg, prompt, **kw)
            return lambda prompt, **kw: http_request(client, target, cfg, prompt, tokenizer, **kw)

        if cfg.warmup:
            for target in cfg.targets:
                log(f"warm-up: {target.name}")
                warm = await sender(target)("Hello, this is a warm-up request.")
                if not warm.ok:
                    raise RuntimeError(f"The target {target.name} failed its warm-up request: {warm.error}")

        async def measure(target: Target, batch: list[str], concurrency: int, gaps: list[float]):
            """One target's share of a round: its wall time, results and CPU seconds (None without pids)."""
            cpu0 = cpu_by_process(target.pids) if target.pids else None
            seconds, results = await drive(sender(target), batch, concurrency=concurrency, gaps=gaps)
            cpu = None
            if cpu0 is not None:
                cpu = {name: used - cpu0[name] for name, used in cpu_by_process(target.pids).items()}
            return seconds, results, cpu

        scenarios = []
        rng = random.Random(cfg.seed)
        rounds = max(1, min(cfg.rounds, len(prompts)))
        for concurrency in cfg.concurrency:
            runs = {t.name: Collected() for t in cfg.targets}
            for r in range(rounds):
                batch = prompts[r * len(prompts) // rounds : (r + 1) * len(prompts) // rounds]
                gaps = arrival_gaps(len(batch), cfg.request_rate, rng)  # the same schedule for every target
                for target in _rotated(cfg.targets, r):
                    log(f"concurrency {concurrency}, round {r + 1}/{rounds}: {target.name} ({len(batch)} requests)")
                    runs[target.name].add(*await measure(target, batch, concurrency, gaps))
            scenarios.append(
                {
                    "concurrency": concurrency,
                    "request_rate": None if math.isinf(cfg.request_rate) else cfg.request_rate,
                    "targets": {name: run.summary(cfg.goodput) for name, run in runs.items()},
                    "requests": {name: [_request_record(x) for x in run.results] for name, run in runs.items()},
                }
            )
        if cfg.long_prompt_tokens:
            scenarios.append(await _long_prompt(cfg, longs, measure, log))
        if cfg.cotenant_doc_tokens:
            scenarios.append(await _cotenant(cfg, prompts, docs, sender, log))
    return scenarios


@dataclass
class Collected:
    """One target's results in one scenario, summed over rounds."""

    results: list[RequestResult] = field(default_factory=list)
    seconds: float = 0.0
    cpu_s: dict[str, float] | None = None  # by process

    def add(self, seconds: float, results: list[RequestResult], cpu_s: dict[str, float] | None) -> None:
        self.seconds += seconds
        self.results += results
        if cpu_s is not None:
            self.cpu_s = self.cpu_s or {}
            for name, used in cpu_s.items():
                self.cpu_s[name] = self.cpu_s.get(name, 0.0) + used

    def summary(self, limits: dict[str, float]) -> dict:
        out = summarize(self.results, self.seconds, limits)
        tokens = out["output_tokens_total"]
        counted = self.cpu_s is not None and tokens
        out["cpu_s"] = sum(self.cpu_s.values()) if self.cpu_s is not None else None
        out["cpu_ms_per_token"] = out["cpu_s"] * 1000 / tokens if counted else None
        out["cpu_ms_per_token_by_process"] = (
            {name: used * 1000 / tokens for name, used in self.cpu_s.items()} if counted else None
        )
        return out


def _rotated(targets: list[Target], r: int) -> list[Target]:
    """Round r's order: rotated, so no target always goes first (or right after another)."""
    return targets[r % len(targets) :] + targets[: r % len(targets)]


def _request_record(x: RequestResult) -> dict:
    return {
        "ok": x.ok,
        "error": x.error,
        "prompt_tokens": x.prompt_tokens,
        "output_tokens": x.output_tokens,
        "ttft_ms": None if x.ttft_s is None else x.ttft_s * 1000,
        "e2e_ms": None if x.e2e_s is None else x.e2e_s * 1000,
        "itl_ms": [g * 1000 for g in x.itl_s],
        "server_timings": x.server_timings,
    }


COTENANT_CHATS = 3
# The document goes out once every chat has written this many tokens: their gaps before it are
# the baseline its slices are measured against (the stall factor bounds the ratio).
COTENANT_TOKENS_BEFORE = 8


def stall_ratios(chats: list[RequestResult], doc: RequestResult) -> dict:
    """The chats' gaps before a document was sent, and during its reading (sent to its first
    token), in ms: the gaps, by when each ended."""
    out: dict[str, list[float]] = {"before_ms": [], "during_ms": []}
    first = doc.token_times()[:1]
    if doc.sent_s is None or not first:
        return out
    for chat in chats:
        times = chat.token_times()
        for a, b in zip(times, times[1:], strict=False):
            if b <= doc.sent_s:
                out["before_ms"].append((b - a) * 1000)
            elif b <= first[0]:
                out["during_ms"].append((b - a) * 1000)
    return out


def stall_summary(before_ms: list[float], during_ms: list[float]) -> dict:
    """The chats' ITL p50 and p99 while the document was read, each divided by their median gap
    before it (the issue's measure: at most the stall factor, 3x by default)."""
    before = percentile(before_ms, 50)
    p50, p99 = percentile(during_ms, 50), percentile(during_ms, 99)
    return {
        "gap_before_ms": before,
        "itl_during_ms": {"p50": p50, "p99": p99},
        "gaps_before": len(before_ms),
        "gaps_during": len(during_ms),
        "p50_ratio": p50 / before if before and p50 is not None else None,
        "p99_ratio": p99 / before if before and p99 is not None else None,
    }


async def _cotenant_round(send, chats: list[str], doc: str, chat_tokens: int) -> list[RequestResult]:
    """Three chats, then the document once each chat has written COTENANT_TOKENS_BEFORE tokens
    (or one has ended); the chats' results, then the document's."""
    counts = [0] * len(chats)
    ready = asyncio.Event()

    def seen(i: int) -> None:
        counts[i] += 1
        if min(counts) >= COTENANT_TOKENS_BEFORE:
            ready.set()

    tasks = [
        asyncio.create_task(send(p, max_tokens=chat_tokens, on_token=lambda i=i: seen(i))) for i, p in enumerate(chats)
    ]
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    document = await send(doc)
    return [*await asyncio.gather(*tasks), document]


async def _cotenant(cfg: ServingConfig, prompts: list[str], docs: list[str], sender, log) -> dict:
    """Three chats writing, then one long document, every round: what the document does to the
    chats' gaps (during its reading, against before it), and how long it waits for its first
    token beside them."""
    chats = {t.name: Collected() for t in cfg.targets}
    documents = {t.name: Collected() for t in cfg.targets}
    gaps = {t.name: {"before_ms": [], "during_ms": []} for t in cfg.targets}
    for r, doc in enumerate(docs):
        batch = [prompts[(r * COTENANT_CHATS + i) % len(prompts)] for i in range(COTENANT_CHATS)]
        for target in _rotated(cfg.targets, r):
            log(f"co-tenant round {r + 1}/{len(docs)}: {target.name} ({COTENANT_CHATS} chats, then a document)")
            start = time.perf_counter()
            results = await _cotenant_round(sender(target), batch, doc, cfg.cotenant_chat_tokens)
            seconds = time.perf_counter() - start
            chats[target.name].add(seconds, results[:COTENANT_CHATS], None)
            documents[target.name].add(seconds, results[COTENANT_CHATS:], None)
            if results[-1].ok:
                for key, values in stall_ratios([x for x in results[:COTENANT_CHATS] if x.ok], results[-1]).items():
                    gaps[target.name][key] += values
    return {
        "concurrency": COTENANT_CHATS + 1,
        "request_rate": None,
        "cotenant": {
            "chats": COTENANT_CHATS,
            "doc_tokens": cfg.cotenant_doc_tokens,
            "chat_tokens": cfg.cotenant_chat_tokens,
            "tokens_before": COTENANT_TOKENS_BEFORE,
        },
        "targets": {name: run.summary(cfg.goodput) for name, run in chats.items()},
        "documents": {name: run.summary(cfg.goodput) for name, run in documents.items()},
        "stall": {name: stall_summary(g["before_ms"], g["during_ms"]) for name, g in gaps.items()},
        "requests": {name: [_request_record(x) for x in run.results] for name, run in chats.items()},
    }


async def _long_prompt(cfg: ServingConfig, longs: list[str], measure, log) -> dict:
    """One long prompt at a time, then its decode: the TTFT a pasted document waits on an idle
    server, and the TPOT of an answer written that deep in the context."""
    runs = {t.name: Collected() for t in cfg.targets}
    for r, prompt in enumerate(longs):
        for target in _rotated(cfg.targets, r):
            log(f"long prompt {r + 1}/{len(longs)}: {target.name} ({cfg.long_prompt_tokens} tokens)")
            runs[target.name].add(*await measure(target, [prompt], 1, [0.0]))
    return {
        "concurrency": 1,
        "request_rate": None,
        "long_prompt": {"prompt_tokens": cfg.long_prompt_tokens},
        "targets": {name: run.summary(cfg.goodput) for name, run in runs.items()},
        "requests": {name: [_request_record(x) for x in run.results] for name, run in runs.items()},
    }


def run(cfg: ServingConfig, log: Callable[[str], None] = print) -> dict:
    """Run every scenario against every target; returns the JSON-ready result."""
    started = time.time()
    tokenizer = Tokenizer(cfg.model_path, cfg.tokenizer)
    prompts = make_prompts(tokenizer, n=cfg.num_prompts, length=cfg.prompt_tokens, seed=cfg.seed)
    docs = []
    if cfg.cotenant_doc_tokens:
        docs = make_prompts(tokenizer, n=cfg.rounds, length=cfg.cotenant_doc_tokens, seed=cfg.seed + 1)
    longs = []
    if cfg.long_prompt_tokens:
        longs = make_prompts(tokenizer, n=cfg.rounds, length=cfg.long_prompt_tokens, seed=cfg.seed + 2)
    raw = RawEngine(cfg) if any(t.is_raw for t in cfg.targets) else None
    try:
        scenarios = asyncio.run(_run_async(cfg, prompts, docs, longs, tokenizer, raw, log))
    finally:
        if raw is not None:
            raw.close()
    config = asdict(cfg)
    config["model_path"] = str(cfg.model_path)
    config["request_rate"] = None if math.isinf(cfg.request_rate) else cfg.request_rate
    for target in config["targets"]:
        target["api_key"] = "…" if target["api_key"] else None  # never write a secret into a report
    return {
        "machine": machine(cpus=os.cpu_count()),
        "model": cfg.model_path.name,
        "config": config,
        "scenarios": scenarios,
        "seconds": time.time() - started,
    }


# --- llama-cpp-python's own server ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(
    argv: list[str], name: str, port: int, log_path: Path | None, env: dict | None = None
) -> tuple[subprocess.Popen, str]:
    """Start a server and wait until its /v1/models answers (llama-server: once the model is
    loaded); returns the process and its /v1 URL."""
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - lives with the process
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited at start; see {log_path or 'its output'}.")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as response:
                if response.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.5)
    stop_process(proc)
    raise RuntimeError(f"{name} did not answer within 120 s; see {log_path or 'its output'}.")


def start_llama_cpp_server(
    model_path: Path, *, threads: int, n_ctx: int, port: int | None = None, log_path: Path | None = None
) -> tuple[subprocess.Popen, str]:
    """Start `python -m llama_cpp.server` on the model; returns the process and its /v1 URL.

    --interrupt_requests False: by default a new request cuts off the one streaming, which
    would turn a concurrency test into a test of interruptions.
    """
    port = port or free_port()
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--n_ctx",
        str(n_ctx),
        "--n_batch",
        "512",
        "--interrupt_requests",
        "False",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    # Its settings also read HOST and PORT from the environment, over the flags above.
    env = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT")}
    name = "llama-cpp-python's server (is `pip install -r requirements-dev.txt` done?)"
    return _start_server(argv, name, port, log_path, env)


def llama_server_argv(
    binary: Path,
    model_path: Path,
    *,
    threads: int,
    n_ctx_seq: int,
    slots: int,
    n_batch: int,
    port: int,
    gpu_layers: int = 0,
) -> list[str]:
    """llama-server set up as HomeAI's worker sets up llama.cpp: one context of slots x the
    context per slot, a unified KV cache the slots share, the whole sliding-window cache, the
    same batch and threads."""
    return [
        str(binary),
        "--model",
        str(model_path),
        "--threads",
        str(threads),
        "--threads-batch",
        str(threads),
        "--ctx-size",
        str(n_ctx_seq * slots),
        "--parallel",
        str(slots),
        "--kv-unified",
        "--swa-full",
        "--batch-size",
        str(n_batch),
        "--ubatch-size",
        str(n_batch),
        "--n-gpu-layers",
        str(gpu_layers),
        "--no-webui",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


def start_llama_server(
    binary: Path,
    model_path: Path,
    *,
    threads: int,
    n_ctx_seq: int,
    slots: int,
    n_batch: int = 512,
    gpu_layers: int = 0,
    port: int | None = None,
    log_path: Path | None = None,
) -> tuple[subprocess.Popen, str]:
    """Start llama.cpp's llama-server (built by `make llama-server`); returns the process and its /v1 URL."""
    if not binary.is_file():
        raise RuntimeError(
            f"There is no llama-server at {binary}: build it with `make llama-server` (or give its path)."
        )
    port = port or free_port()
    argv = llama_server_argv(
        binary,
        model_path,
        threads=threads,
        n_ctx_seq=n_ctx_seq,
        slots=slots,
        n_batch=n_batch,
        port=port,
        gpu_layers=gpu_layers,
    )
    return _start_server(argv, "llama-server", port, log_path)


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


# --- reports ----------------------------------------------------------------------------------


def _dist(stats: dict) -> str:
    return " / ".join(num(stats[k], 1) for k in ("mean", "p50", "p90", "p99"))


def markdown(result: dict) -> str:
    cfg = result["config"]
    header = ("target", "concurrency", "done", "output tok/s", "req/s", "goodput req/s")
    header += tuple(f"{metric} ms mean / p50 / p90 / p99" for metric in ("TTFT", "TPOT", "ITL", "e2e"))
    rows = (
        (
            name,
            scenario["concurrency"],
            f"{s['completed']}/{s['completed'] + s['failed']}",
            num(s["output_tps"], 1),
            num(s["request_rps"], 2),
            num(s["goodput_rps"], 2),
            *(_dist(s[metric]) for metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")),
        )
        for scenario in result["scenarios"]
        if not _own_table(scenario)  # its own table, below
        for name, s in scenario["targets"].items()
    )
    intro = (
        f"Model {result['model']}, {cfg['threads']} threads, {cfg['endpoint']} endpoint, prompts of "
        f"{cfg['prompt_tokens']} tokens, up to {cfg['output_tokens']} output tokens, {cfg['num_prompts']} requests "
        f"per target per concurrency in {cfg['rounds']} interleaved rounds, seed {cfg['seed']}."
    )
    server_header = (
        "target",
        "concurrency",
        "TTFT p50 client ms",
        "TTFT p50 server ms",
        "client − server p50 ms",
        "token counts equal",
        "CPU ms per token",
        "of which, by process",
    )
    server_rows = (
        (
            name,
            scenario["concurrency"],
            num(s["ttft_ms"]["p50"], 1),
            num(s["server_ttft_ms"]["p50"], 1),
            num(s["ttft_client_minus_server_ms"]["p50"], 1),
            f"{s['tokens_match']}/{s['tokens_counted']}",
            num(s.get("cpu_ms_per_token"), 2),
            ", ".join(f"{n} {num(ms, 2)}" for n, ms in (s.get("cpu_ms_per_token_by_process") or {}).items()) or "–",
        )
        for scenario in result["scenarios"]
        if not _own_table(scenario)
        for name, s in scenario["targets"].items()
    )
    parts = [
        intro,
        "",
        *table(header, rows),
        "",
        "Server side (HomeAI: timings.ttft_ms; llama-server: timings.prompt_ms):",
    ]
    parts += ["", *table(server_header, server_rows)]
    for scenario in result["scenarios"]:
        if "long_prompt" in scenario:
            parts += ["", *long_prompt_table(scenario)]
        if "cotenant" in scenario:
            parts += ["", *cotenant_table(scenario)]
    return "\n".join(parts)


def _own_table(scenario: dict) -> bool:
    return "cotenant" in scenario or "long_prompt" in scenario


def long_prompt_table(scenario: dict) -> list[str]:
    """The long prompt's TTFT (and the prompt tokens per second it means) and its answer's TPOT."""
    n = scenario["long_prompt"]["prompt_tokens"]
    header = ("target", "done", "TTFT ms p50 / p90", "prompt tok/s (p50 TTFT)", "TPOT ms p50 / p90")
    rows = []
    for name, s in scenario["targets"].items():
        ttft = s["ttft_ms"]["p50"]
        rows.append(
            (
                name,
                f"{s['completed']}/{s['completed'] + s['failed']}",
                f"{num(ttft, 1)} / {num(s['ttft_ms']['p90'], 1)}",
                num(n * 1000 / ttft if ttft else None, 1),
                f"{num(s['tpot_ms']['p50'], 1)} / {num(s['tpot_ms']['p90'], 1)}",
            )
        )
    return [f"Long prompt: one {n}-token prompt at a time, then its answer:", "", *table(header, rows)]


def cotenant_table(scenario: dict) -> list[str]:
    """The chats' TPOT and ITL beside the document's TTFT and end, per target."""
    info = scenario["cotenant"]
    header = (
        "target",
        "chats gap before ms p50",
        "chats ITL during ms p50 / p99",
        "during ÷ before p50 / p99",
        "chats TPOT ms p50 / p99",
        "document TTFT ms p50 / max",
        "document e2e ms p50",
    )
    rows = []
    for name, chats in scenario["targets"].items():
        doc = scenario["documents"][name]
        stall = (scenario.get("stall") or {}).get(name) or stall_summary([], [])
        during = stall["itl_during_ms"]
        rows.append(
            (
                name,
                num(stall["gap_before_ms"], 1),
                f"{num(during['p50'], 1)} / {num(during['p99'], 1)}",
                f"{num(stall['p50_ratio'], 2)}x / {num(stall['p99_ratio'], 2)}x",
                f"{num(chats['tpot_ms']['p50'], 1)} / {num(chats['tpot_ms']['p99'], 1)}",
                f"{num(doc['ttft_ms']['p50'])} / {num(doc['ttft_ms']['p99'])}",
                num(doc["e2e_ms"]["p50"]),
            )
        )
    intro = (
        f"Co-tenants: {info['chats']} chats writing, then one {info['doc_tokens']}-token document once each has "
        f"{info.get('tokens_before', COTENANT_TOKENS_BEFORE)} tokens, each round; the chats' gaps during its reading "
        "(sent to first token) against their median gap before it:"
    )
    return [intro, "", *table(header, rows)]


def write_outputs(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """serving.json and serving.html (TTFT, TPOT and ITL percentiles and output tokens/s per target)."""
    scenarios = result["scenarios"]
    titles = []
    for sc in scenarios:
        c = sc["concurrency"]
        titles += [f"TTFT ms (c={c})", f"TPOT ms (c={c})", f"ITL ms (c={c})", f"output tokens/s (c={c})"]
    fig = figure(titles, rows=len(scenarios), cols=4, vertical_spacing=0.12)
    colors = {"p50": "#2b8fd6", "p90": "#d99a1e", "p99": "#c9372c"}
    for row, sc in enumerate(scenarios, start=1):
        names = list(sc["targets"])
        for col, metric in enumerate(("ttft_ms", "tpot_ms", "itl_ms"), start=1):
            for p in ("p50", "p90", "p99"):
                fig.add_trace(
                    go.Bar(
                        name=p,
                        x=names,
                        y=[sc["targets"][n][metric][p] for n in names],
                        marker_color=colors[p],
                        legendgroup=p,
                        showlegend=row == 1 and col == 1,
                    ),
                    row,
                    col,
                )
        fig.add_trace(
            go.Bar(
                name="output tokens/s",
                x=names,
                y=[sc["targets"][n]["output_tps"] for n in names],
                marker_color="#22a06b",
                showlegend=row == 1,
            ),
            row,
            4,
        )
    cfg = result["config"]
    title = (
        f"Serving benchmark on {result['model']}: {cfg['threads']} threads, {cfg['prompt_tokens']} prompt / "
        f"{cfg['output_tokens']} output tokens"
    )
    return write(result, fig, out_dir, "serving", title=title, size=(1400, 380 * len(scenarios) + 120))
