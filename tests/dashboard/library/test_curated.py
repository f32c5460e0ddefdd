"""The recommended models: one list, the page's and docs/install.md's table agree with it."""

from __future__ import annotations

import re
from pathlib import Path

from dashboard.library.curated import RECOMMENDED
from infra.pull.names import parse

INSTALL = Path(__file__).resolve().parents[3] / "docs" / "install.md"


def test_every_recommended_model_has_a_name_the_puller_takes_and_a_licence():
    assert [r.size_mb for r in RECOMMENDED] == sorted(r.size_mb for r in RECOMMENDED)
    for r in RECOMMENDED:
        assert parse(r.name).short
        assert r.licence and r.licence_url.startswith("https://") and str(r.good_at)


def test_the_install_guides_table_is_the_list():
    text = INSTALL.read_text()
    table = text[text.index("| Model | Name to pull |") :]
    rows = re.findall(r"^\| ([^|]+) \| `([^`]+)` \| ([\d.]+) (MB|GB) \|", table, re.M)
    assert [(title, name) for title, name, _, _ in rows] == [(r.title, r.name) for r in RECOMMENDED]
    for (_, _, size, unit), r in zip(rows, RECOMMENDED, strict=True):
        assert float(size) * (1000 if unit == "GB" else 1) == round(r.size_mb, -2 if unit == "GB" else 0)
