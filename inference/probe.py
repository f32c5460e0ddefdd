"""Hardware probe: the box's memory bandwidth and matrix-multiply FLOP/s, measured once per host.

The dashboard's "why" panel divides these by the model's size to get the ceilings of decode
(bandwidth-bound: every weight is read for each token) and prefill (compute-bound: about
2 x parameters FLOPs per prompt token). Numbers come from numpy in about a second; on a GPU the
NVIDIA driver (NVML, via nvidia-ml-py) supplies name, memory, bus width and clocks. Results are
cached in Redis per host, so every web process can show every worker machine's figures.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pynvml

from inference import redis_client

log = logging.getLogger(__name__)

KEY_PREFIX = "homeai:probe:"
LOCK_TTL_S = 60
# Hardware rarely changes, but a box can get a new GPU or RAM: measure again after a month.
CACHE_TTL_S = 30 * 24 * 3600
BANDWIDTH_BYTES = 256 * 1024 * 1024  # well above any last-level cache, small enough for a NAS
MATMUL_N = 1024
REPEATS = 5

_lock = threading.Lock()


def host_name() -> str:
    return socket.gethostname()


def probe_key(host: str) -> str:
    return KEY_PREFIX + host


# --- measurements ---------------------------------------------------------------------------------


def _best_seconds(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure_bandwidth(nbytes: int = BANDWIDTH_BYTES, repeats: int = REPEATS, threads: int | None = None) -> float:
    """Read bandwidth in GB/s: every core scans its share of one large array (best of `repeats`).

    Reading only, like a decode step reads the weights; numpy's max is SIMD and releases the
    GIL, so one thread per core gets close to what the memory system gives.
    """
    threads = threads or os.cpu_count() or 1
    data = np.ones(max(nbytes // 4, threads * 1024), dtype=np.float32)
    chunks = np.array_split(data, threads)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(np.max, chunks))  # touch every page once before timing
        seconds = _best_seconds(lambda: list(pool.map(np.max, chunks)), repeats)
    return data.nbytes / seconds / 1e9


def measure_gflops(n: int = MATMUL_N, repeats: int = REPEATS) -> float:
    """float32 matrix-multiply GFLOP/s through numpy's BLAS (all its threads; best of `repeats`)."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    a @ b  # warm-up: BLAS starts its threads on first use
    seconds = _best_seconds(lambda: a @ b, repeats)
    return 2 * n**3 / seconds / 1e9


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_nvml_state: dict = {}
_nvml_lock = threading.Lock()


def _nvml():
    """The pynvml module, initialised once per process; None without the package or an NVIDIA driver.

    NVML only talks to the driver (it does not initialise CUDA), so it is safe before a fork.
    """
    with _nvml_lock:
        if "module" not in _nvml_state:
            _nvml_state["module"] = None
            try:
                pynvml.nvmlInit()
                _nvml_state["module"] = pynvml
            except Exception:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded: no GPU here
                pass
        return _nvml_state["module"]


def _nvml_call(fn, *args):
    try:
        return fn(*args)
    except Exception:  # one unsupported query (older GPU or driver) must not sink the rest
        return None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def gpu_static() -> list[dict]:
    """Per GPU: name, memory, theoretical memory bandwidth and FP32 peak, read from NVML."""
    nvml = _nvml()
    if nvml is None:
        return []
    gpus = []
    for index in range(_nvml_call(nvml.nvmlDeviceGetCount) or 0):
        handle = _nvml_call(nvml.nvmlDeviceGetHandleByIndex, index)
        if handle is None:
            continue
        name = _nvml_call(nvml.nvmlDeviceGetName, handle)
        memory = _nvml_call(nvml.nvmlDeviceGetMemoryInfo, handle)
        bus_bits = _nvml_call(nvml.nvmlDeviceGetMemoryBusWidth, handle)
        mem_mhz = _nvml_call(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM)
        sm_mhz = _nvml_call(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM)
        cores = _nvml_call(nvml.nvmlDeviceGetNumGpuCores, handle)
        gpus.append(
            {
                "index": index,
                "name": _text(name) or f"GPU {index}",
                "memory_total_bytes": int(memory.total) if memory else None,
                "bus_width_bits": bus_bits,
                "mem_clock_mhz": mem_mhz,
                "sm_clock_mhz": sm_mhz,
                "cores": cores,
                "bandwidth_gbs": gpu_bandwidth_gbs(bus_bits, mem_mhz),
                "gflops_fp32": gpu_gflops_fp32(cores, sm_mhz),
            }
        )
    return gpus


def gpu_bandwidth_gbs(bus_width_bits: int | None, mem_clock_mhz: int | None) -> float | None:
    """Theoretical bandwidth: bus width x memory clock x 2 (NVML reports the double-data-rate base clock)."""
    if not bus_width_bits or not mem_clock_mhz:
        return None
    return bus_width_bits / 8 * mem_clock_mhz * 1e6 * 2 / 1e9


def gpu_gflops_fp32(cores: int | None, sm_clock_mhz: int | None) -> float | None:
    """FP32 peak: one fused multiply-add (2 FLOPs) per CUDA core per clock."""
    if not cores or not sm_clock_mhz:
        return None
    return cores * sm_clock_mhz * 1e6 * 2 / 1e9


def gpu_live() -> list[dict]:
    """Per GPU, now: utilisation and memory in use (for the dashboard's system strip)."""
    nvml = _nvml()
    if nvml is None:
        return []
    out = []
    for index in range(_nvml_call(nvml.nvmlDeviceGetCount) or 0):
        handle = _nvml_call(nvml.nvmlDeviceGetHandleByIndex, index)
        if handle is None:
            continue
        name = _nvml_call(nvml.nvmlDeviceGetName, handle)
        util = _nvml_call(nvml.nvmlDeviceGetUtilizationRates, handle)
        memory = _nvml_call(nvml.nvmlDeviceGetMemoryInfo, handle)
        out.append(
            {
                "index": index,
                "name": _text(name) or f"GPU {index}",
                "util_percent": util.gpu if util else None,
                "memory_used_bytes": int(memory.used) if memory else None,
                "memory_total_bytes": int(memory.total) if memory else None,
            }
        )
    return out


def measure() -> dict:
    """Run the probe on this host (about 1 s on a 2-core box) and return its figures."""
    start = time.perf_counter()
    result = {
        "host": host_name(),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "bandwidth_gbs": round(measure_bandwidth(), 2),
        "gflops": round(measure_gflops(), 1),
        "gpus": gpu_static(),
        "measured_at": time.time(),
    }
    result["duration_s"] = round(time.perf_counter() - start, 3)
    return result


# --- cache ------------------------------------------------------------------------------------------


def read(host: str | None = None) -> dict | None:
    raw = redis_client.client().get(probe_key(host or host_name()))
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def ensure_cached(layers: Callable[[], dict] | None = None) -> dict | None:
    """This host's probe from Redis, measured and stored first when missing (idempotent).

    Several workers may start together on one box: a short Redis lock lets one of them measure
    (two probes at once would halve each other's bandwidth) and the rest keep the cached result.
    `layers`: a worker's layer probe (inference/engine/layer_probe.py: llama.cpp, which the web
    never loads), measured first and stored with the rest; a cached probe without its
    `layer_ms` (one the web measured, or an older version's) is measured again.
    """
    with _lock:
        cached = read()
        if cached is not None and (layers is None or "layer_ms" in cached):
            return cached
        r = redis_client.client()
        lock_key = probe_key(host_name()) + ":lock"
        if not r.set(lock_key, os.getpid(), nx=True, ex=LOCK_TTL_S):
            return None  # another process on this host is measuring right now
        try:
            # The layer probe first: it waits for a quiet moment, which the rest then shares
            # (and numpy's BLAS threads, which spin a while after a product, are not yet running).
            first = _layers_or_none(layers) if layers is not None else {}
            result = {**measure(), **first}
            r.set(probe_key(result["host"]), json.dumps(result), ex=CACHE_TTL_S)
            log.info(
                "hardware probe: %.1f GB/s read bandwidth, %.0f GFLOP/s float32 (%.2f s), %s ms a layer",
                result["bandwidth_gbs"],
                result["gflops"],
                result["duration_s"],
                result.get("layer_ms", "?"),
            )
            return result
        except Exception:
            log.exception("hardware probe failed")
            return None
        finally:
            r.delete(lock_key)


def _layers_or_none(layers: Callable[[], dict]) -> dict:
    """The layer probe's figures; {} when it failed (the rest is still worth storing, and the
    next worker to start measures the layers again)."""
    try:
        return layers()
    except Exception:
        log.exception("layer probe failed")
        return {}


def read_all() -> dict[str, dict]:
    """Every host's cached probe, by host name."""
    r = redis_client.client()
    out = {}
    for key in r.scan_iter(match=KEY_PREFIX + "*", count=100):
        name = key.decode()[len(KEY_PREFIX) :]
        if name.endswith(":lock"):
            continue
        raw = r.get(key)
        if raw is None:
            continue
        try:
            out[name] = json.loads(raw)
        except ValueError:
            continue
    return out


def box() -> dict:
    """The figures forecasts use: this host's probe (the web's host is the workers' on one
    machine), else any host's that measured its bandwidth; {} when none has."""
    own = read()
    if own and own.get("bandwidth_gbs"):
        return own
    return next((p for p in read_all().values() if p.get("bandwidth_gbs")), {})
