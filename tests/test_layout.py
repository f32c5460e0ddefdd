"""The layout's rules, checked: the web process never loads llama.cpp, and imports sit at the
top of modules (docs/architecture.md says why and where the one exception is)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("homeai", "dashboard", "inference", "bench", "tests")

# Loads what a web process serves: every URL pattern's view, every socket consumer, the ASGI
# application, and a task sent the way the web sends it (send_task finalizes the Celery app).
WEB_PROCESS = """
import os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
import django
django.setup()
from django.urls import URLPattern, URLResolver, get_resolver
def walk(patterns):
    for p in patterns:
        if isinstance(p, URLResolver):
            walk(p.url_patterns)
        else:
            assert callable(p.callback)
walk(get_resolver().url_patterns)
from homeai.asgi import application
from homeai.routing import websocket_urlpatterns
for route in websocket_urlpatterns:
    assert route.callback
from homeai.celery import app
app.finalize(auto=True)
worker_only = ("llama_cpp", "inference.engine.runner", "inference.worker.runtime", "inference.worker.tasks")
print(",".join(sorted(m for m in sys.modules if m.startswith(worker_only))))
"""


def test_the_web_process_never_imports_llama_cpp():
    out = subprocess.run(
        [sys.executable, "-c", WEB_PROCESS], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "", f"the web process imported {out.stdout.strip()}"


def _python_files():
    for folder in SOURCE_DIRS:
        yield from (p for p in (ROOT / folder).rglob("*.py") if "migrations" not in p.parts)
    yield ROOT / "manage.py"


def test_imports_are_at_module_top_except_the_commented_llama_cpp_ones():
    found = []
    for path in _python_files():
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom) and "llama.cpp" not in lines[inner.lineno - 1]:
                        found.append(f"{path.relative_to(ROOT)}:{inner.lineno}: {lines[inner.lineno - 1].strip()}")
    assert not found, "function-local imports:\n" + "\n".join(found)
