"""The web process puts what it loaded at start out of the cyclic collector's way (gc.freeze in
homeai/asgi.py): a full collection of it took 90-110 ms of daphne's interpreter on a 2-core box."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_asgi_application_freezes_what_it_loaded():
    code = "import gc, homeai.asgi; print(gc.get_freeze_count())"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) > 10_000  # Django, Channels and the app's modules, at least
