"""The hardware probe: quick, plausible, measured once per host and cached in Redis."""

from __future__ import annotations

import json

import pytest

from inference import probe, redis_client


@pytest.fixture
def clean_probe_keys():
    r = redis_client.client()

    def wipe():
        for key in r.scan_iter(match=probe.KEY_PREFIX + "*"):
            r.delete(key)

    wipe()
    yield
    wipe()


def test_it_measures_a_plausible_memory_bandwidth():
    gbs = probe.measure_bandwidth(nbytes=32 * 1024 * 1024, repeats=2)
    assert 0.5 < gbs < 10_000


def test_it_measures_a_plausible_matrix_multiply_rate():
    gflops = probe.measure_gflops(n=256, repeats=2)
    assert 0.1 < gflops < 1_000_000


def test_gpu_figures_follow_from_bus_width_and_clocks():
    # An H100 SXM: 5120-bit HBM3 at 2619 MHz (double data rate) is its documented 3.35 TB/s.
    assert probe.gpu_bandwidth_gbs(5120, 2619) == pytest.approx(3352.3, rel=1e-4)
    assert probe.gpu_gflops_fp32(16896, 1980) == pytest.approx(66_908, rel=1e-4)
    assert probe.gpu_bandwidth_gbs(None, 2619) is None
    assert probe.gpu_gflops_fp32(16896, None) is None


def test_without_an_nvidia_driver_it_reports_no_gpu(monkeypatch):
    monkeypatch.setattr(probe, "_nvml", lambda: None)
    assert probe.gpu_static() == []
    assert probe.gpu_live() == []


def test_it_probes_once_per_host_and_then_reads_the_cache(clean_probe_keys, monkeypatch):
    calls = []

    def fake_measure():
        calls.append(1)
        return {
            "host": probe.host_name(),
            "bandwidth_gbs": 21.5,
            "gflops": 140.0,
            "gpus": [],
            "measured_at": 1.0,
            "duration_s": 0.1,
        }

    monkeypatch.setattr(probe, "measure", fake_measure)
    first = probe.ensure_cached()
    second = probe.ensure_cached()
    assert first == second
    assert len(calls) == 1
    assert probe.read_all() == {probe.host_name(): first}


def test_it_leaves_the_measuring_to_whoever_holds_the_lock(clean_probe_keys, monkeypatch):
    monkeypatch.setattr(probe, "measure", lambda: pytest.fail("measured while another process held the lock"))
    redis_client.client().set(probe.probe_key(probe.host_name()) + ":lock", 1, ex=10)
    assert probe.ensure_cached() is None


def test_read_all_lists_every_host_and_skips_locks_and_junk(clean_probe_keys):
    r = redis_client.client()
    r.set(probe.probe_key("nas"), json.dumps({"host": "nas", "bandwidth_gbs": 12.0}))
    r.set(probe.probe_key("gpu-box"), json.dumps({"host": "gpu-box", "bandwidth_gbs": 900.0}))
    r.set(probe.probe_key("nas") + ":lock", 1)
    r.set(probe.probe_key("broken"), "not json")
    assert set(probe.read_all()) == {"nas", "gpu-box"}


def test_a_real_probe_is_stored_with_every_figure(clean_probe_keys):
    result = probe.ensure_cached()
    assert result["bandwidth_gbs"] > 0 and result["gflops"] > 0
    assert result["cores"] >= 1 and isinstance(result["gpus"], list)
    assert result["duration_s"] < 10
    assert probe.read() == result


def test_a_workers_layer_probe_is_stored_with_the_rest_and_asked_for_again_when_missing(clean_probe_keys, monkeypatch):
    """The web may have stored a probe without the layer cost (it never loads llama.cpp), and an
    older version stored none: a worker's probe measures again and stores it."""
    figures = {"host": probe.host_name(), "bandwidth_gbs": 21.5, "gflops": 140.0, "duration_s": 0.1}
    monkeypatch.setattr(probe, "measure", lambda: dict(figures))
    assert "layer_ms" not in probe.ensure_cached()
    assert probe.ensure_cached(lambda: {"layer_ms": 0.07})["layer_ms"] == 0.07
    assert probe.read()["layer_ms"] == 0.07
    assert probe.ensure_cached(lambda: pytest.fail("measured again"))["layer_ms"] == 0.07


def test_a_failed_layer_probe_still_stores_the_rest(clean_probe_keys, monkeypatch):
    figures = {"host": probe.host_name(), "bandwidth_gbs": 21.5, "gflops": 140.0, "duration_s": 0.1}
    monkeypatch.setattr(probe, "measure", lambda: dict(figures))

    def broken():
        raise RuntimeError("llama.cpp could not load the probe model")

    assert probe.ensure_cached(broken) == figures
    assert probe.read() == figures
