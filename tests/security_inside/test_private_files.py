"""A fresh install's files are its account's alone: the database, the secret key and every
folder the start-up makes are 0600 and 0700, whatever umask the shell that started it had."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from tests.support import ROOT


def test_a_fresh_start_makes_private_files_and_folders(tmp_path):
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL", "HOMEAI_MODELS_DIR")}
    env.update(HOMEAI_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="homeai.settings")
    # What `make run` and the image's entrypoint run first, from a shell with the usual umask.
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        preexec_fn=lambda: os.umask(0o022),
    )
    made = [data, *data.rglob("*")]
    assert (data / "secret_key").exists() and (data / "homeai.sqlite3").exists()
    modes = {str(p.relative_to(tmp_path)): stat.S_IMODE(p.stat().st_mode) for p in made}
    wrong = {
        name: oct(mode) for name, mode in modes.items() if mode != (0o700 if (tmp_path / name).is_dir() else 0o600)
    }
    assert not wrong, wrong
