"""Pulling a model: HomeAI's /api/pull against curl, from the same local registry, in one run.

    python manage.py bench_pull                      # 250 MB, 5 rounds
    python manage.py bench_pull --size-mb 64 --rounds 2

It starts Debian's docker-registry (the CNCF distribution registry, as the pull tests do) on a
spare port, pushes a GGUF of --size-mb (a header and one f32 tensor) in Ollama's manifest layout,
and starts a HomeAI of its own (bench.soak.own_stack: its own Redis, daphne and a worker, whose
models folder is a scratch one). Each round pulls the model twice, in alternating order:

- HomeAI: `POST /api/pull` with a staff key, as the `ollama` client sends it, read to `success`
  (the web sends the pull to the worker, which fetches the manifest, downloads the blob to a
  partial file while hashing it, checks its sha256 and that it is a GGUF, and installs it); then
  `/api/delete`, so the next round downloads it again;
- curl: the model blob's URL from the same registry into a file on the same disk;
- curl, checked: the same, its bytes also through sha256sum as they arrive and compared with the
  digest (`curl | tee file | sha256sum`): the work a pull must do, by the usual tools.

Both write to the same file system; `sync` runs between downloads (untimed) so neither pays for
the other's dirty pages. What it reports: MB/s per round for each (HomeAI's over the whole pull,
from the request to `success`, and over the model layer's bytes alone, from its first progress
line to its last), and the ratios of the medians, HomeAI over curl and over checked curl.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from django.contrib.auth import get_user_model
from django.core.management import call_command

from bench.soak import own_stack
from tests.infra.pull.servers import Registry, push_ollama_model, tiny_gguf

MB = 1_000_000
NAME = "bench-pull:latest"
REPO = "library/bench-pull"


def _homeai(url: str, key: str, digest: str) -> dict:
    """One pull through /api/pull: seconds to `success` and the model layer's own seconds."""
    headers = {"Authorization": f"Bearer {key}"}
    started = time.perf_counter()
    first = last = None
    statuses = []
    with httpx.stream("POST", f"{url}/api/pull", json={"model": NAME}, headers=headers, timeout=600) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            part = json.loads(line)
            if "error" in part:
                raise RuntimeError(f"HomeAI's pull failed: {part['error']}")
            statuses.append(part.get("status"))
            if part.get("digest") == digest and part.get("completed"):
                now = time.perf_counter()
                first = first or now
                last = now
    whole = time.perf_counter() - started
    if statuses[-1:] != ["success"]:
        raise RuntimeError(f"HomeAI's pull ended without success: {statuses[-3:]}")
    deleted = httpx.request("DELETE", f"{url}/api/delete", json={"model": NAME}, headers=headers, timeout=60)
    deleted.raise_for_status()
    return {"whole_s": whole, "layer_s": (last - first) if first and last and last > first else whole}


def _curl(blob_url: str, target: Path, digest: str | None = None) -> float:
    """curl's seconds for the blob, written to target (removed after); with a digest, checked
    as a pull checks it: `curl | tee target | sha256sum`, streaming, compared at the end."""
    started = time.perf_counter()
    if digest is None:
        subprocess.run(["curl", "-sS", "-L", "-o", str(target), blob_url], check=True)
    else:
        line = f"curl -sS -L '{blob_url}' | tee '{target}' | sha256sum"
        out = subprocess.run(["bash", "-o", "pipefail", "-c", line], check=True, capture_output=True, text=True)
        if out.stdout.split()[0] != digest.removeprefix("sha256:"):
            raise RuntimeError("curl's download does not match the digest")
    seconds = time.perf_counter() - started
    target.unlink()
    return seconds


def run(*, size_mb: int = 250, rounds: int = 5, log=print) -> dict:
    if shutil.which("curl") is None:
        raise RuntimeError("curl is not installed (apt-get install curl)")
    work = Path(tempfile.mkdtemp(prefix="homeai-pull-"))  # the registry's storage and the pulled models
    registry = Registry(work)
    stack, scratch = own_stack(
        "pull",
        HOMEAI_MODELS_DIR=str(work / "models"),
        HOMEAI_PULL_REGISTRY=registry.url,
        HOMEAI_BUNDLED_MODELS="0",
        HOMEAI_MAX_PULLS="1",
    )
    registry.start()
    try:
        gguf = tiny_gguf(work / "bench.gguf", n_floats=size_mb * MB // 4)
        size = gguf.stat().st_size
        manifest = push_ollama_model(registry.url, REPO, "latest", gguf)
        gguf.unlink()
        digest = manifest["layers"][0]["digest"]
        blob_url = f"{registry.url}/v2/{REPO}/blobs/{digest}"
        stack.start()
        get_user_model().objects.create_user("bench", password="bench-password-1", is_staff=True)
        out = io.StringIO()
        call_command("create_api_key", "bench", "--name", "bench_pull", stdout=out)
        key = out.getvalue().strip()
        log(f"bench_pull: {size / MB:.0f} MB, {rounds} rounds; registry {registry.url}, HomeAI {stack.url}")
        results = []
        for index in range(rounds):
            order = ("homeai", "curl", "checked") if index % 2 == 0 else ("checked", "curl", "homeai")
            row = {"round": index + 1, "order": list(order)}
            for who in order:
                os.sync()
                if who == "homeai":
                    timed = _homeai(stack.url, key, digest)
                    row["homeai_mb_s"] = size / MB / timed["whole_s"]
                    row["homeai_layer_mb_s"] = size / MB / timed["layer_s"]
                elif who == "curl":
                    row["curl_mb_s"] = size / MB / _curl(blob_url, work / "curl.bin")
                else:
                    row["checked_mb_s"] = size / MB / _curl(blob_url, work / "curl.bin", digest)
            log(
                f"round {row['round']} ({' then '.join(order)}): HomeAI {row['homeai_mb_s']:.0f} MB/s "
                f"(layer {row['homeai_layer_mb_s']:.0f}), curl {row['curl_mb_s']:.0f} MB/s, "
                f"curl | sha256sum {row['checked_mb_s']:.0f} MB/s"
            )
            results.append(row)
    finally:
        stack.stop()
        registry.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    homeai = statistics.median(r["homeai_mb_s"] for r in results)
    layer = statistics.median(r["homeai_layer_mb_s"] for r in results)
    curl = statistics.median(r["curl_mb_s"] for r in results)
    checked = statistics.median(r["checked_mb_s"] for r in results)
    return {
        "size_bytes": size,
        "rounds": results,
        "homeai_mb_s": round(homeai, 1),
        "homeai_layer_mb_s": round(layer, 1),
        "curl_mb_s": round(curl, 1),
        "ratio": round(homeai / curl, 3),
        "layer_ratio": round(layer / curl, 3),
        "checked_mb_s": round(checked, 1),
        "checked_ratio": round(homeai / checked, 3),
        "load_average": os.getloadavg()[0],
    }


def markdown(result: dict) -> str:
    lines = [
        "| round (order) | HomeAI, whole pull | HomeAI, model layer | curl | curl, checked |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in result["rounds"]:
        lines.append(
            f"| {r['round']} ({' then '.join(r['order'])}) | {r['homeai_mb_s']:.0f} MB/s "
            f"| {r['homeai_layer_mb_s']:.0f} MB/s | {r['curl_mb_s']:.0f} MB/s | {r['checked_mb_s']:.0f} MB/s |"
        )
    lines.append(
        f"| **median** | **{result['homeai_mb_s']:.0f} MB/s ({result['ratio']:.2f}x curl)** "
        f"| {result['homeai_layer_mb_s']:.0f} MB/s ({result['layer_ratio']:.2f}x) "
        f"| **{result['curl_mb_s']:.0f} MB/s** "
        f"| **{result['checked_mb_s']:.0f} MB/s ({result['checked_ratio']:.2f}x)** |"
    )
    return "\n".join(lines)
