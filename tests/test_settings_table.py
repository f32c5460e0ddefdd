"""Every setting the code reads from the environment has its row in the README's settings table,
so a person can find what they may change (and a new setting cannot land without its row)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("homeai", "infra", "inference", "accounts", "documents", "api", "dashboard")
# env_str("HOMEAI_X", ...), env_int(...), os.environ.get("HOMEAI_X") and the like.
READ = re.compile(r"""(?:env_[a-z_]+|environ\.get|getenv)\(\s*["'](HOMEAI_[A-Z0-9_]+)["']""")


def settings_read() -> set[str]:
    names = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            names.update(READ.findall(path.read_text(encoding="utf-8")))
    return names


def settings_in_table() -> set[str]:
    rows = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`(HOMEAI_[A-Z0-9_]+)`", row.split(" | ")[0])}


def test_the_code_reads_settings_at_all():
    assert {"HOMEAI_DATA_DIR", "HOMEAI_MAX_TOKENS", "HOMEAI_QUEUE"} <= settings_read()


def test_every_setting_the_code_reads_has_a_row_in_the_readme():
    assert sorted(settings_read() - settings_in_table()) == []
