"""A model pull's speed against curl's from the same registry (issue 39: HomeAI should get at
least 90% of what curl gets).

A real OCI registry (Debian's docker-registry, as the pull tests start it) holds a GGUF of
about 250 MB (the bundled Gemma 3 270M file) in Ollama's manifest layout. Each round pulls it by
name through infra.pull (manifest, every layer, sha256, GGUF check, rename into place) and
fetches the model blob with `curl -o` from the same server, in turns, so both see the same
machine; the figure is the median MB/s of each and their ratio.
"""

from __future__ import annotations

import logging
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.report import machine, num, table, write_json
from infra.pull import store
from infra.pull.puller import pull
from tests.infra.pull.servers import Registry, push_ollama_model

NAME = "bench-pull"
MB = 1e6


@dataclass(frozen=True)
class PullBenchConfig:
    gguf: Path
    rounds: int = 5
    work_dir: Path | None = None  # where both download to (the models folder's disk, by default a temporary folder)


def _homeai(registry: str, models_dir: Path, digest: str) -> float:
    """Seconds for one pull by name, from nothing on disk to the model in place (removed
    afterwards, as curl's file is: neither leaves dirty pages for the other to write back)."""
    start = time.perf_counter()
    path = pull(NAME, models_dir, registry=registry, status=lambda _line: None, progress=lambda *_: None)
    elapsed = time.perf_counter() - start
    assert store.held_digest(path) == digest, "the pulled model is not the pushed one"
    store.remove(path)
    return elapsed


def _curl(url: str, target: Path) -> float:
    target.unlink(missing_ok=True)
    start = time.perf_counter()
    subprocess.run(["curl", "--silent", "--show-error", "--fail", "-o", str(target), url], check=True)
    elapsed = time.perf_counter() - start
    target.unlink()
    return elapsed


def run(cfg: PullBenchConfig, log=print) -> dict:
    """Push the GGUF into a fresh registry, then `rounds` rounds of (HomeAI, curl), alternating
    which goes first."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    if shutil.which("curl") is None:
        raise RuntimeError("curl is not installed (apt-get install curl).")
    size = cfg.gguf.stat().st_size
    with tempfile.TemporaryDirectory(prefix="bench-pull-", dir=cfg.work_dir) as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "registry").mkdir()
        models_dir = tmp_path / "models"
        models_dir.mkdir()
        registry = Registry(tmp_path / "registry")
        registry.start()
        try:
            manifest = push_ollama_model(registry.url, f"library/{NAME}", "latest", cfg.gguf)
            digest = manifest["layers"][0]["digest"]
            url = f"{registry.url}/v2/library/{NAME}/blobs/{digest}"
            log(f"pushed {cfg.gguf.name} ({size / MB:.0f} MB) to {registry.url}")
            _curl(url, tmp_path / "curl.gguf")  # warm the registry's page cache for both
            homeai, curl = [], []
            for i in range(cfg.rounds):
                order = ("homeai", "curl") if i % 2 == 0 else ("curl", "homeai")
                for who in order:
                    if who == "homeai":
                        homeai.append(size / MB / _homeai(registry.url, models_dir, digest))
                    else:
                        curl.append(size / MB / _curl(url, tmp_path / "curl.gguf"))
                log(f"round {i + 1}: HomeAI {homeai[-1]:,.0f} MB/s, curl {curl[-1]:,.0f} MB/s")
        finally:
            registry.stop()
    med_h, med_c = statistics.median(homeai), statistics.median(curl)
    return {
        "machine": machine(),
        "file": cfg.gguf.name,
        "bytes": size,
        "rounds": cfg.rounds,
        "homeai_mbs": homeai,
        "curl_mbs": curl,
        "homeai_median_mbs": med_h,
        "curl_median_mbs": med_c,
        "ratio": med_h / med_c,
        "goal": 0.9,
    }


def markdown(result: dict) -> str:
    rows = [
        ("HomeAI (pull by name)", num(result["homeai_median_mbs"]), num(min(result["homeai_mbs"]))),
        ("curl -o (the model blob)", num(result["curl_median_mbs"]), num(min(result["curl_mbs"]))),
    ]
    lines = table(("", "median MB/s", "slowest MB/s"), rows)
    lines.append("")
    lines.append(
        f"{result['file']}, {result['bytes'] / MB:.0f} MB, {result['rounds']} rounds: HomeAI gets "
        f"{result['ratio']:.2f} of curl's rate (goal ≥ {result['goal']:.2f})."
    )
    return "\n".join(lines)


def write(result: dict, out_dir: Path) -> Path:
    return write_json(result, out_dir, "pull")
