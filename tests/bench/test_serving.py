"""The serving benchmark: vLLM's definitions of its statistics, and a run against this server."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from accounts.keys import api_key_create
from bench import serving
from inference.models import Generation


@pytest.fixture
def api_key(make_user, live_server_url, worker, settled) -> str:
    """A HomeAI key for a new user, with the live server and a worker ready to answer."""
    _key, raw = api_key_create(user=make_user("ada"), name="tests")
    return raw


@pytest.mark.integration
def test_the_serving_benchmark_measures_this_server(api_key, live_server_url, tmp_path):
    cfg = serving.ServingConfig(
        targets=[serving.Target(name="homeai", url=live_server_url + "/v1", api_key=api_key)],
        model_path=settings.HOMEAI_MODEL_PATH,
        threads=2,
        prompt_tokens=16,
        output_tokens=4,
        num_prompts=2,
        rounds=1,
        concurrency=(2,),
        goodput={"ttft_ms": 60_000},
        warmup=False,
    )
    result = serving.run(cfg, log=lambda _msg: None)
    summary = result["scenarios"][0]["targets"]["homeai"]
    assert summary["completed"] == 2 and summary["failed"] == 0
    assert summary["prompt_tokens_mean"] == pytest.approx(17, abs=2)  # 16 + BOS, give or take a merge
    assert 2 <= summary["output_tokens_total"] <= 8
    assert summary["ttft_ms"]["p50"] > 0 and summary["e2e_ms"]["p99"] >= summary["ttft_ms"]["p99"]
    assert summary["goodput_rps"] == pytest.approx(summary["request_rps"])
    assert summary["server_ttft_ms_mean"] > 0  # HomeAI's own timings came back in the stream
    assert Generation.objects.filter(client="bench_serving", status="done").count() == 2
    json_path, html_path = serving.write_outputs(result, tmp_path)
    assert json.loads(json_path.read_text())["config"]["targets"][0]["api_key"] == "…"  # no secret in reports
    assert "plotly" in html_path.read_text()[:5000].lower()
    assert "| homeai | 2 | 2/2 |" in serving.markdown(result)


def test_benchmark_statistics_follow_vllms_definitions():
    fast = serving.RequestResult(target="t", ok=True, output_tokens=5, ttft_s=0.1, e2e_s=0.5, itl_s=[0.1] * 4)
    slow = serving.RequestResult(target="t", ok=True, output_tokens=3, ttft_s=1.0, e2e_s=1.4, itl_s=[0.1, 0.3])
    failed = serving.RequestResult(target="t", ok=False, error="HTTP 503")
    summary = serving.summarize([fast, slow, failed], duration_s=2.0, limits=serving.parse_goodput("ttft_ms=500"))
    assert fast.tpot_s == pytest.approx(0.1) and slow.tpot_s == pytest.approx(0.2)  # first token excluded
    assert summary["tpot_ms"]["mean"] == pytest.approx(150)
    assert summary["itl_ms"]["mean"] == pytest.approx(1000 * 0.8 / 6)  # every gap, pooled
    assert summary["output_tps"] == pytest.approx(4.0) and summary["request_rps"] == pytest.approx(1.0)
    assert summary["goodput_rps"] == pytest.approx(0.5) and summary["failed"] == 1
    with pytest.raises(ValueError, match="Unknown goodput limit"):
        serving.parse_goodput("latency=5")
    assert serving.parse_target("raw").is_raw
    assert serving.parse_target("peer=http://127.0.0.1:8001/v1/").url == "http://127.0.0.1:8001/v1"


def _streamed(ttft_s: float, chunks: int, timings: dict) -> serving.RequestResult:
    """A request that streamed `chunks` chunks of text, of which its server counted 4 tokens."""
    return serving.RequestResult(
        target="t",
        ok=True,
        output_tokens=4,
        ttft_s=ttft_s,
        e2e_s=0.2,
        text_chunks=chunks,
        counted_tokens=4,
        server_timings=timings,
    )


def test_server_side_figures_sit_beside_the_clients():
    homeai = _streamed(0.110, 4, {"ttft_ms": 104.0, "prompt_ms": 60.0})
    peer = _streamed(0.090, 3, {"prompt_ms": 70.0})
    assert homeai.server_ttft_ms == 104.0 and peer.server_ttft_ms == 70.0  # llama-server has no ttft_ms
    summary = serving.summarize([homeai, peer], duration_s=1.0, limits={})
    assert summary["ttft_client_minus_server_ms"]["p50"] == pytest.approx((6 + 20) / 2)
    assert (summary["tokens_match"], summary["tokens_counted"]) == (1, 2)
    run = serving.Collected()
    run.add(1.0, [homeai], {"daphne 10": 0.05, "celery 11": 0.15})
    run.add(1.0, [homeai], {"daphne 10": 0.05, "celery 11": 0.15})
    summary = run.summary({})
    assert summary["cpu_ms_per_token"] == pytest.approx(400 / 8)
    assert summary["cpu_ms_per_token_by_process"] == pytest.approx({"daphne 10": 100 / 8, "celery 11": 300 / 8})
    assert serving.Collected(results=[homeai], seconds=1.0).summary({})["cpu_ms_per_token"] is None


def test_cpu_counts_name_a_target_and_its_processes():
    assert serving.parse_pids("homeai=12, 13,14", ["homeai"]) == ("homeai", (12, 13, 14))
    for bad in ("homeai", "homeai=", "homeai=x", "homeai=0"):
        with pytest.raises(ValueError, match="NAME=PID"):
            serving.parse_pids(bad, ["homeai"])
    with pytest.raises(ValueError, match="no target named 'peer'"):
        serving.parse_pids("peer=12", ["homeai"])
    assert serving.cpu_seconds((os.getpid(),)) > 0
    [(name, used)] = serving.cpu_by_process((os.getpid(),)).items()
    assert name.endswith(f" {os.getpid()}") and used > 0  # "python 1234": the process's name and id


def test_llama_server_is_set_up_as_homeais_worker_sets_up_llama_cpp(tmp_path):
    argv = serving.llama_server_argv(
        tmp_path / "llama-server", tmp_path / "m.gguf", threads=2, n_ctx_seq=4096, slots=4, n_batch=512, port=8123
    )
    flags = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert argv[0] == str(tmp_path / "llama-server") and "--kv-unified" in argv and "--swa-full" in argv
    assert flags["--ctx-size"] == "16384" and flags["--parallel"] == "4"  # 4 slots of 4,096 tokens
    assert flags["--threads"] == flags["--threads-batch"] == "2"
    assert flags["--batch-size"] == flags["--ubatch-size"] == "512" and argv[-2:] == ["--port", "8123"]


def test_the_command_says_what_is_missing(tmp_path):
    with pytest.raises(CommandError, match="make llama-server"):
        call_command("bench_serving", "--llama-server", str(tmp_path / "llama-server"), "--out", str(tmp_path))
    with pytest.raises(CommandError, match="no target named 'peer'"):
        call_command("bench_serving", "--target", "homeai=http://127.0.0.1:9/v1", "--cpu", "peer=1")
    with pytest.raises(CommandError, match="no process has the id"):
        call_command("bench_serving", "--target", "homeai=http://127.0.0.1:9/v1", "--cpu", "homeai=999999999")
    with pytest.raises(CommandError, match="cotenant-doc-tokens"):
        call_command("bench_serving", "--raw", "--cotenant-doc-tokens", "-5")


def _stream(sent: float, first: float, gaps: list[float]) -> serving.RequestResult:
    """A streamed answer sent at `sent` (client clock, s), its first token `first` s later."""
    return serving.RequestResult(
        target="t", ok=True, output_tokens=len(gaps) + 1, ttft_s=first, e2e_s=first + sum(gaps), itl_s=gaps, sent_s=sent
    )


def test_the_cotenant_report_sets_the_chats_gaps_during_the_document_against_before_it():
    # Chats write every 20 ms from t=0.1 s; the document goes out at t=0.25 s and its first token
    # comes at t=0.55 s; meanwhile one chat's gaps are 60 ms, then they are 20 ms again.
    steady = _stream(0.0, 0.1, [0.02] * 20)
    slowed = _stream(0.0, 0.1, [0.02] * 7 + [0.06] * 5 + [0.02] * 5)  # 7 gaps end by 0.24 s
    doc = _stream(0.25, 0.30, [0.02] * 3)
    assert doc.token_times()[0] == pytest.approx(0.55)
    gaps = serving.stall_ratios([steady, slowed], doc)
    assert len(gaps["before_ms"]) == 14  # gaps that ended by the document's send, 7 each
    assert gaps["before_ms"] == pytest.approx([20.0] * 14)
    # During, gaps ending in (0.25, 0.55] s: steady's from 0.26 to its last at 0.50 (13), and
    # slowed's five 60 ms ones (0.30 to 0.54); its next ends at 0.56.
    assert sorted(gaps["during_ms"]) == pytest.approx(sorted([20.0] * 13 + [60.0] * 5))
    summary = serving.stall_summary(gaps["before_ms"], gaps["during_ms"])
    assert summary["gap_before_ms"] == pytest.approx(20.0)
    assert summary["p50_ratio"] == pytest.approx(1.0)
    assert summary["p99_ratio"] == pytest.approx(3.0)
    assert summary["gaps_during"] == 18
    empty = serving.stall_summary([], [])
    assert empty["p50_ratio"] is None and empty["p99_ratio"] is None


def test_a_document_that_never_answered_has_no_stall_figures():
    doc = serving.RequestResult(target="t", ok=False, error="HTTP 503", sent_s=0.3)
    assert serving.stall_ratios([_stream(0.0, 0.1, [0.02] * 5)], doc) == {"before_ms": [], "during_ms": []}


def test_the_document_goes_out_once_every_chat_has_written_its_first_tokens():
    sent: list[tuple[str, int]] = []  # (prompt, tokens the chats had written when it was sent)
    written = [0]

    async def send(prompt, max_tokens=None, on_token=None):
        sent.append((prompt, written[0]))
        for _ in range(max_tokens or 4):
            await asyncio.sleep(0)
            written[0] += 1
            if on_token:
                on_token()
        return serving.RequestResult(target="t", ok=True, output_tokens=max_tokens or 4)

    results = asyncio.run(serving._cotenant_round(send, ["a", "b", "c"], "doc", chat_tokens=20))
    assert [p for p, _ in sent] == ["a", "b", "c", "doc"] and len(results) == 4
    assert sent[-1][1] >= 3 * serving.COTENANT_TOKENS_BEFORE


def test_the_long_prompt_and_cotenant_tables_report_their_own_figures():
    summary = serving.summarize([_stream(0.0, 0.5, [0.02] * 9)], duration_s=1.0, limits={})
    result = {
        "model": "m.gguf",
        "config": {
            "threads": 2,
            "endpoint": "completions",
            "prompt_tokens": 16,
            "output_tokens": 10,
            "num_prompts": 1,
            "rounds": 1,
            "seed": 0,
        },
        "scenarios": [
            {"concurrency": 1, "long_prompt": {"prompt_tokens": 2000}, "targets": {"homeai": summary}},
            {
                "concurrency": 4,
                "cotenant": {"chats": 3, "doc_tokens": 2000, "chat_tokens": 256, "tokens_before": 8},
                "targets": {"homeai": summary},
                "documents": {"homeai": summary},
                "stall": {"homeai": serving.stall_summary([20.0] * 10, [30.0] * 9 + [60.0])},
            },
        ],
    }
    text = serving.markdown(result)
    assert "one 2000-token prompt at a time" in text
    assert "| homeai | 1/1 | 500.0 / 500.0 | 4,000.0 | 20.0 / 20.0 |" in text  # 2,000 tokens in 0.5 s
    assert "| homeai | 20.0 | 30.0 / 57.3 | 1.50x / 2.87x |" in text
