"""The retrieval benchmark in its smallest run: a stack of its own indexes one page of python3-doc,
chats stream beside it, two labelled questions are scored, and a small synthetic collection is
searched; the report has every part and this process is on its own database again."""

from __future__ import annotations

import json
import os

import pytest
from django.core.management import call_command
from django.db import connection

from bench import retrieval


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    "postgres" in os.environ.get("DATABASE_URL", ""),
    reason="the benchmark runs a stack of its own on a fresh SQLite database and points this process at it",
)
def test_the_retrieval_benchmark_runs_in_its_smallest_mode(tmp_path):
    database = connection.settings_dict["NAME"]
    call_command(
        "bench_retrieval",
        "--quick",
        "--questions=2",
        "--no-peer",
        "--sizes=300",
        "--queries=3",
        "--window=2",
        "--chat-tokens=8",
        f"--out={tmp_path}",
        stdout=open(tmp_path / "stdout.txt", "w"),  # noqa: SIM115 - closed with the test's files
        stderr=open(tmp_path / "stderr.txt", "w"),  # noqa: SIM115
    )
    result = json.loads((tmp_path / "retrieval.json").read_text())
    assert connection.settings_dict["NAME"] == database
    assert result["corpus"]["pages"] == 1 and result["indexing"]["status"] == "done"
    assert result["indexing"]["homeai"]["chunks"] > 0 and result["indexing"]["homeai"]["chunks_per_s"] > 0
    assert result["quality"]["questions"] == 2
    assert {"fulltext", "vectors", "hybrid"} <= result["quality"].keys()
    assert result["itl_before"]["gaps"] > 0 and "itl_during" in result
    (row,) = result["search"]
    assert row["chunks"] == 300 and row["hybrid"]["n"] == 3 and row["vectors"]["p50_ms"] > 0
    assert "| 300 |" in retrieval.markdown(result)
