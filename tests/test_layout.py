"""The layout's rules, checked (docs/architecture.md, Layout, says why): the web process never
loads llama.cpp; imports sit at the top of modules (the one commented exception); the top-level
packages import down their layers only, in no circle; and nothing but the Celery app names the
worker package."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The layers, from the wiring down; a package imports its own layer's packages or lower ones.
# inference.engine is a layer of its own: it imports nothing of the project but itself.
LAYERS = {
    "homeai": 4,  # wiring: settings, urls, routing, asgi, celery, middleware
    "dashboard": 3,  # features: the pages and their sockets
    "api": 3,  # the HTTP APIs (OpenAI, Ollama, embeddings, the server's own endpoints)
    "bench": 3,  # the benchmarks (a dev-only app)
    "inference": 2,  # the domain: conversations, answers, workers and what the web knows of them
    "accounts": 2,  # the people: accounts, invites, API keys
    "documents": 2,  # the household's documents: collections, files, chunks, indexing, retrieval
    "inference.engine": 1,  # the engine thread and llama.cpp, without Django
    "infra": 1,  # shared infrastructure: environment, database backend and threads, errors
}
APP_DIRS = ("homeai", "dashboard", "api", "bench", "inference", "accounts", "documents", "infra")
SOURCE_DIRS = (*APP_DIRS, "tests")

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
worker_only = ("llama_cpp", "inference.engine.runner", "inference.worker.runtime", "inference.worker.tasks",
    "documents.extraction", "pypdf", "docx", "inference.speech", "piper", "onnxruntime")
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


def _app_modules():
    """(module name, path, the project's modules it imports at module level) of every app file."""
    for folder in APP_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            imported = set()
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.Import):
                    imported.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module)
                    imported.update(f"{node.module}.{alias.name}" for alias in node.names)
            yield name, path, {m for m in imported if m.split(".")[0] in APP_DIRS}


def _unit(module: str) -> str:
    """The layer unit a module belongs to: its top-level package, or inference.engine."""
    if module == "inference.engine" or module.startswith("inference.engine."):
        return "inference.engine"
    return module.split(".")[0]


def test_packages_import_down_their_layers_only():
    upward = []
    for name, path, imported in _app_modules():
        for target in imported:
            if LAYERS[_unit(target)] > LAYERS[_unit(name)]:
                upward.append(f"{path.relative_to(ROOT)}: imports {target} ({_unit(name)} -> {_unit(target)})")
    assert not upward, "imports that run up the layers:\n" + "\n".join(sorted(upward))


def test_the_top_level_packages_import_each_other_in_no_circle():
    edges: dict[str, set[str]] = {unit: set() for unit in LAYERS}
    for name, _path, imported in _app_modules():
        edges[_unit(name)].update(_unit(t) for t in imported if _unit(t) != _unit(name))
    state: dict[str, str] = {}

    def visit(unit: str, trail: list[str]) -> None:
        state[unit] = "open"
        for nxt in sorted(edges[unit]):
            assert state.get(nxt) != "open", "a circle: " + " -> ".join([*trail, unit, nxt])
            if nxt not in state:
                visit(nxt, [*trail, unit])
        state[unit] = "done"

    for unit in LAYERS:
        if unit not in state:
            visit(unit, [])


def test_nothing_but_the_celery_app_names_the_worker_package():
    """The worker package (inference/worker) is what a worker process runs: the web reaches
    workers through inference.dispatch, and only homeai/celery.py names the task module."""
    named = []
    for folder in APP_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if relative.parts[:2] == ("inference", "worker") or relative == Path("homeai/celery.py"):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if "inference.worker" in line or "inference import worker" in line:
                    named.append(f"{relative}:{number}: {line.strip()}")
    assert not named, "the worker package named outside the Celery app:\n" + "\n".join(named)
