"""The Docker packaging, tested without a Docker engine.

- Both Dockerfiles pass hadolint, and their base images are pinned to a version.
- The compose files (each alone, and the base merged with the NVIDIA override, with every
  variable at its default) validate against the Compose Specification's JSON schema, and follow
  the CasaOS app store's rules for `x-casaos`.
- The compose file's defaults are the app's own defaults.
- The image's entrypoint runs natively, with the same roles and variables as in the image:
  migrate, prepare-model, init, manage, web and worker, the health check, and the switch from
  root to PUID:PGID.
- llama.cpp is compiled with portable flags for every architecture (docker/llama-cmake-args.sh).

The image itself is built and its compose app run by `make image-test` (scripts/image-test.sh,
tests/image/compose_check.py), which needs Podman and is not part of this suite.

tests/docker/schemas/compose-spec.json is the Compose Specification's schema (compose-spec/compose-spec,
schema/compose-spec.json, Apache License 2.0: tests/docker/schemas/compose-spec.LICENSE), as vendored by
check-jsonschema 0.39.0.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest
import redis
import yaml
from django.conf import settings

from infra.env import database_config
from tests.support import wait_until

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
BIN = Path(sys.executable).parent
ENTRYPOINT = DOCKER / "entrypoint.sh"
DOCKERFILES = [DOCKER / "Dockerfile", DOCKER / "Dockerfile.cuda"]
COMPOSE = DOCKER / "compose.yaml"
COMPOSE_NVIDIA = DOCKER / "compose.nvidia.yaml"
COMPOSE_POSTGRES = DOCKER / "compose.postgres.yaml"
COMPOSE_LAN = DOCKER / "compose.lan.yaml"
COMPOSE_WORKER = DOCKER / "compose.worker.yaml"
# The secrets of an install that adds machines: required, never given a default in a file.
SECRETS = {"POSTGRES_PASSWORD": "pg0secret1", "REDIS_PASSWORD": "redis0secret2"}
WORKER_SECRETS = {
    "REDIS_URL": "redis://:redis0secret2@nas.lan:6379/0",
    "DATABASE_URL": "postgres://homeai:pg0secret1@nas.lan:5432/homeai",
}
SCHEMA = json.loads((ROOT / "tests" / "docker" / "schemas" / "compose-spec.json").read_text())

# The processes started here use their own Redis database, queue and channel prefix, so they
# never trade tasks or events with the rest of the suite or a HomeAI running on this machine.
REDIS_URL = urlsplit(settings.REDIS_URL)._replace(path="/13").geturl()
QUEUE = "homeai-dockertest"


# --- Dockerfiles ------------------------------------------------------------------------------


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_passes_hadolint(dockerfile):
    result = subprocess.run(
        [str(BIN / "hadolint"), "--no-color", "--failure-threshold", "style", str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_ignores_are_justified_and_base_images_pinned(dockerfile):
    lines = dockerfile.read_text().splitlines()
    for number, line in enumerate(lines):
        if line.startswith("# hadolint ignore="):
            assert number > 0 and lines[number - 1].startswith("#") and "hadolint" not in lines[number - 1], (
                f"{dockerfile.name}:{number + 1}: an ignored rule needs a comment saying why, above it"
            )
    args: dict[str, str] = {}
    stages: set[str] = set()
    images = []
    for line in lines:
        if m := re.match(r"ARG (\w+)=(\S+)$", line):
            args.setdefault(m[1], m[2])
        if m := re.match(r"FROM (\S+)(?: AS (\S+))?$", line, re.IGNORECASE):
            image = re.sub(r"\$\{(\w+)\}", lambda v: args[v[1]], m[1])
            if image not in stages:
                images.append(image)
            if m[2]:
                stages.add(m[2])
    assert images, "no FROM found"
    for image in images:
        name, _, tag = image.rpartition(":")
        assert name and tag and "/" not in tag, f"{image}: base images need an explicit tag"
        assert tag != "latest" and re.search(r"\d+\.\d+", tag), f"{image}: pin the base image to a version"


def test_entrypoint_passes_shellcheck():
    result = subprocess.run(
        [str(BIN / "shellcheck"), "--shell=sh", "--severity=style", str(ENTRYPOINT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.access(ENTRYPOINT, os.X_OK), "docker/entrypoint.sh must be executable"


def test_build_context_leaves_out_local_state():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    local_state = (".git", ".venv", "data", "docker/data", "docker/models", "*.gguf")
    not_the_app = ("tests", "bench", "scripts", "docs", "Makefile", "requirements-dev.txt")
    for pattern in local_state + not_the_app:
        assert pattern in ignored, f".dockerignore should leave out {pattern}"


# What /app holds in the images: the app and its entrypoint, nothing else.
APP = {"manage.py", "docker/entrypoint.sh", "templates", "static", "locale"} | {
    "homeai",
    "dashboard",
    "api",
    "accounts",
    "documents",
    "inference",
    "infra",
}
# Top-level packages that stay out of the images: the tests and the benchmarks (a dev-only app).
NOT_SHIPPED = {"tests", "bench"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_image_copies_only_the_app_and_is_built_with_portable_flags(dockerfile):
    text = dockerfile.read_text()
    copied = set()
    for m in re.finditer(r"^COPY (?!--from)(.+) (/app/?\S*)$", text, re.MULTILINE):
        sources, target = m[1].split(), m[2]
        for source in sources:
            assert (ROOT / source).exists(), f"{dockerfile.name}: COPY {source}: not in the repository"
            copied.add(source)
        if len(sources) == 1 and not target.endswith("/"):
            assert target == f"/app/{sources[0]}", f"{dockerfile.name}: {m[0]}"
    assert copied == APP, f"{dockerfile.name} copies {sorted(copied)} into /app"
    assert "COPY . " not in text
    # Every top-level Python package of the app is copied.
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - NOT_SHIPPED
    assert packages <= copied, f"{dockerfile.name} misses {packages - copied}"
    # llama.cpp's flags come from the one script, per target architecture; nothing native.
    assert 'llama-cmake-args.sh "${TARGETARCH:-}"' in text
    assert "GGML_NATIVE=ON" not in text and "native" not in re.sub(r"#.*", "", text)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_images_carry_the_postgresql_driver(dockerfile):
    """DATABASE_URL=postgres://... works in both images: psycopg with its own libpq is pinned
    in requirements.txt, which both install, and the build stops if it does not import."""
    requirements = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^psycopg\[binary\]==\d+\.\d+\.\d+$", requirements, re.MULTILINE)
    text = dockerfile.read_text()
    assert "pip install --no-cache-dir -r /tmp/requirements.txt" in text
    assert "python -c 'import psycopg;" in text


def _cmake_args(arch: str, **env: str) -> list[str]:
    result = subprocess.run(
        ["sh", str(DOCKER / "llama-cmake-args.sh"), arch],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, **env),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


@pytest.mark.parametrize("arch", ["amd64", "x86_64", "arm64", "aarch64", "riscv64", "ppc64le"])
def test_llama_cpp_flags_are_portable_on_every_architecture(arch):
    args = _cmake_args(arch)
    assert "-DGGML_NATIVE=OFF" in args and "-DGGML_BACKEND_DL=ON" in args
    assert not any("native" in a.split("=", 1)[-1] for a in args), args
    if arch in ("amd64", "x86_64"):
        # Every x86-64 generation, the best one chosen at start; AMX's variant only works when
        # GCC 12 keeps the stores that fill in its tile configuration.
        assert "-DGGML_CPU_ALL_VARIANTS=ON" in args
        assert "-DCMAKE_C_FLAGS=-fno-dse" in args and "-DCMAKE_CXX_FLAGS=-fno-dse" in args
    elif arch in ("arm64", "aarch64"):
        # One backend for the Armv8.0 baseline (a Raspberry Pi 4 runs it): llama.cpp's Arm
        # variants include Armv9.2 + SME, which Debian 12's GCC 12 cannot compile.
        assert "-DGGML_CPU_ARM_ARCH=armv8-a" in args and "-DGGML_CPU_ALL_VARIANTS=ON" not in args
    else:
        assert not any("ALL_VARIANTS" in a or "ARCH=" in a for a in args), args


def test_arm64_cpu_baseline_is_a_build_argument():
    assert "-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16" in _cmake_args("arm64", ARM64_CPU="armv8.2-a+dotprod+fp16")
    text = (DOCKER / "Dockerfile").read_text()
    assert "ARG ARM64_CPU=armv8-a" in text and 'ARM64_CPU="${ARM64_CPU}"' in text


def test_cmake_args_script_passes_shellcheck():
    script = DOCKER / "llama-cmake-args.sh"
    result = subprocess.run(
        [str(BIN / "shellcheck"), "--shell=sh", "--severity=style", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- Compose files ----------------------------------------------------------------------------

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_]\w*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}|(?P<named>[A-Za-z_]\w*))"
)


def _interpolate(value, env: dict[str, str]):
    """Compose's variable interpolation ($$, $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ...)."""
    if isinstance(value, dict):
        return {k: _interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def replace(m: re.Match) -> str:
        if m["escaped"]:
            return "$"
        name = m["braced"] or m["named"]
        op, arg = m["op"], m["arg"] or ""
        present = name in env and (env[name] != "" or not (op or "").startswith(":"))
        if op in (":-", "-"):
            return env[name] if present else arg
        if op in (":+", "+"):
            return arg if present else ""
        if op in (":?", "?") and not present:
            raise ValueError(f"{name} is required: {arg}")
        return env.get(name, "")

    return _VARIABLE.sub(replace, value)


def _variables(value) -> list[re.Match]:
    if isinstance(value, dict):
        return [m for v in value.values() for m in _variables(v)]
    if isinstance(value, list):
        return [m for v in value for m in _variables(v)]
    return list(_VARIABLE.finditer(value)) if isinstance(value, str) else []


_REPLACED_LISTS = {"command", "entrypoint", "test"}


def _merge(base, override, key: str = ""):
    """Merge an override file into a base file as `docker compose -f base -f override` does."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for k, v in override.items():
            merged[k] = _merge(base[k], v, k) if k in base else copy.deepcopy(v)
        return merged
    if isinstance(base, list) and isinstance(override, list) and key not in _REPLACED_LISTS:
        return base + [item for item in override if item not in base]
    return copy.deepcopy(override)


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _merged(*overrides: Path) -> dict:
    """compose.yaml with the given files after it (by default compose.nvidia.yaml)."""
    merged = _load(COMPOSE)
    for path in overrides or (COMPOSE_NVIDIA,):
        merged = _merge(merged, _load(path))
    return merged


def _nas() -> dict:
    """What a NAS that serves other machines' workers runs, every variable at its default."""
    return _interpolate(_merged(COMPOSE_POSTGRES, COMPOSE_LAN), SECRETS)


def _schema_errors(document: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_vendored_schema_is_the_compose_specification():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["title"] == "Compose Specification"
    assert _schema_errors({"services": {"web": {"image": "x:1", "ports": "8000"}}}), "schema accepts anything"


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(lambda: _load(COMPOSE), id="compose.yaml"),
        pytest.param(lambda: _load(COMPOSE_NVIDIA), id="compose.nvidia.yaml"),
        pytest.param(_merged, id="merged"),
        pytest.param(lambda: _interpolate(_load(COMPOSE), {}), id="compose.yaml-defaults"),
        pytest.param(lambda: _interpolate(_merged(), {}), id="merged-defaults"),
        pytest.param(lambda: _load(COMPOSE_POSTGRES), id="compose.postgres.yaml"),
        pytest.param(lambda: _load(COMPOSE_LAN), id="compose.lan.yaml"),
        pytest.param(lambda: _load(COMPOSE_WORKER), id="compose.worker.yaml"),
        pytest.param(lambda: _interpolate(_merged(COMPOSE_POSTGRES), SECRETS), id="postgres-defaults"),
        pytest.param(_nas, id="nas-defaults"),
        pytest.param(
            lambda: _interpolate(_merged(COMPOSE_NVIDIA, COMPOSE_POSTGRES, COMPOSE_LAN), SECRETS), id="nas-nvidia"
        ),
        pytest.param(lambda: _interpolate(_load(COMPOSE_WORKER), WORKER_SECRETS), id="worker-defaults"),
    ],
)
def test_compose_file_follows_the_compose_specification(document):
    assert _schema_errors(document()) == []


@pytest.mark.parametrize(
    ("path", "required"),
    [
        (COMPOSE, set()),
        (COMPOSE_NVIDIA, set()),
        (COMPOSE_POSTGRES, {"POSTGRES_PASSWORD"}),
        (COMPOSE_LAN, {"REDIS_PASSWORD"}),
        (COMPOSE_WORKER, {"REDIS_URL", "DATABASE_URL"}),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else "",
)
def test_every_compose_variable_has_a_default_but_the_secrets(path, required):
    """Every setting works unset, except the passwords (and the URLs that carry them), which
    have no default: an install that publishes its database never runs on a known password."""
    data = _load(path)
    for m in _variables(data):
        if m["escaped"]:
            continue
        assert m["braced"], f"{m[0]}: write ${{NAME:-default}}"
        if m["braced"] in required:
            assert m["op"] == ":?" and m["arg"].strip(), f"{m[0]}: a secret is required, with a message"
        else:
            assert m["op"] in (":-", "-"), f"{m[0]} has no default"
    assert {m["braced"] for m in _variables(data)} >= required
    for name in required:
        with pytest.raises(ValueError, match=f"{name} is required"):
            _interpolate(data, {k: v for k, v in {**SECRETS, **WORKER_SECRETS}.items() if k != name})


def _images(document: dict) -> dict[str, str]:
    return {name: service["image"] for name, service in document["services"].items() if "image" in service}


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(lambda: _load(COMPOSE), id="compose.yaml"),
        pytest.param(lambda: _load(COMPOSE_NVIDIA), id="compose.nvidia.yaml"),
        pytest.param(lambda: _interpolate(_merged(), {}), id="merged-defaults"),
        pytest.param(_nas, id="nas-defaults"),
        pytest.param(lambda: _interpolate(_load(COMPOSE_WORKER), WORKER_SECRETS), id="worker-defaults"),
    ],
)
def test_every_image_is_pinned(document):
    images = _images(document())
    assert images
    for service, image in images.items():
        name, _, tag = image.rpartition(":")
        assert name and tag and "/" not in tag, f"{service}: {image} has no tag"
        assert tag != "latest" and re.match(r"\d", tag), f"{service}: {image} is not pinned to a version"


def test_compose_roles_and_start_order():
    data = _interpolate(_load(COMPOSE), {})
    services = data["services"]
    assert set(services) >= {"web", "worker", "redis", "migrate"}
    assert services["migrate"]["command"] == ["init"]
    assert services["web"]["command"] == ["web"]
    assert services["worker"]["command"] == ["worker"]
    assert "redis-cli ping" in " ".join(services["redis"]["healthcheck"]["test"])
    for name in ("web", "worker"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
        assert depends["redis"]["condition"] == "service_healthy"
        assert {v.split(":")[1] for v in services[name]["volumes"]} == {"/data", "/models"}
        assert services[name]["image"] == services["migrate"]["image"]
    assert services["web"]["ports"] == ["8000:8000"]


def test_app_containers_are_read_only_unprivileged_and_checked_by_role():
    services = _interpolate(_load(COMPOSE), {})["services"]
    for name in ("migrate", "web", "worker"):
        service = services[name]
        assert service["read_only"] is True, f"{name}: the root file system must be read-only"
        assert service["tmpfs"] == ["/tmp"], name
        assert service["init"] is True, name
        assert "no-new-privileges:true" in service["security_opt"], name
        assert service["cap_drop"] == ["ALL"], name
        # What the entrypoint needs to hand the volumes to PUID:PGID and switch to that account,
        # and the init to pass a stop signal on to the server running as that account.
        assert set(service["cap_add"]) == {"CHOWN", "DAC_OVERRIDE", "KILL", "SETGID", "SETUID"}, name
    # Each server's check names its role: under init: true, PID 1 is not the server.
    for name in ("web", "worker"):
        check = services[name]["healthcheck"]
        assert check["test"] == ["CMD", "/app/docker/entrypoint.sh", "healthcheck", name]
    assert services["migrate"]["healthcheck"] == {"disable": True}


def test_nvidia_override_reserves_the_gpu_for_the_worker():
    merged = _interpolate(_merged(), {})
    worker = merged["services"]["worker"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert worker["build"] == {
        "context": "..",
        "dockerfile": "docker/Dockerfile.cuda",
        "args": {"CUDA_ARCHITECTURES": "default"},
    }
    assert int(worker["environment"]["HOMEAI_GPU_LAYERS"]) > 0
    # One image for every service, and only the worker holds the GPU.
    assert len({service["image"] for service in merged["services"].values() if "build" in service}) == 1
    assert all("deploy" not in merged["services"][name] for name in ("web", "migrate"))


def test_postgres_override_puts_the_app_on_its_own_postgresql():
    merged = _interpolate(_merged(COMPOSE_POSTGRES), SECRETS)
    services = merged["services"]
    postgres = services["postgres"]
    assert postgres["environment"]["POSTGRES_PASSWORD"] == SECRETS["POSTGRES_PASSWORD"]
    assert "pg_isready" in postgres["healthcheck"]["test"]
    assert postgres["volumes"] == ["postgres-data:/var/lib/postgresql/data"] and "postgres-data" in merged["volumes"]
    assert "ports" not in postgres, "only compose.lan.yaml publishes the database"
    # The official Alpine image (the volume's format stays an earlier install's), pgvector built
    # into it from the copy in the repository, which the build context carries.
    assert postgres["build"] == {"context": "..", "dockerfile": "docker/postgres.Dockerfile"}
    dockerfile = (DOCKER / "postgres.Dockerfile").read_text()
    stages = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert stages == ["postgres:17-alpine", "postgres:17-alpine"]
    assert "COPY third_party/pgvector " in dockerfile and (ROOT / "third_party/pgvector/vector.control").is_file()
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert not any(line.strip("/*") in ("third_party", "third_party/pgvector") for line in ignored)
    expected = ("postgres", 5432, postgres["environment"]["POSTGRES_USER"], postgres["environment"]["POSTGRES_DB"])
    for name in ("migrate", "web", "worker"):
        service = services[name]
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy", name
        config = database_config(service["environment"]["DATABASE_URL"])
        assert config["ENGINE"] == "django.db.backends.postgresql", name
        assert (config["HOST"], config["PORT"], config["USER"], config["NAME"]) == expected, name
        assert config["PASSWORD"] == SECRETS["POSTGRES_PASSWORD"], name
    for name in ("web", "worker"):
        assert set(services[name]["depends_on"]) == {"migrate", "redis", "postgres"}


def test_lan_override_publishes_redis_and_postgresql_behind_passwords():
    base = _interpolate(_load(COMPOSE), {})["services"]["redis"]
    services = _nas()["services"]
    redis = services["redis"]
    # compose.yaml's command and healthcheck, which take REDIS_PASSWORD before the generated one
    # (test_compose_redis_asks_for_the_password_the_app_generates runs them).
    assert redis["environment"] == {"REDIS_PASSWORD": SECRETS["REDIS_PASSWORD"]}
    assert redis["command"] == base["command"] and "${REDIS_PASSWORD:-" in base["command"][-1]
    assert redis["healthcheck"] == base["healthcheck"]
    assert redis["ports"] == ["6379:6379"] and services["postgres"]["ports"] == ["5432:5432"]
    for name in ("migrate", "web", "worker"):
        url = urlsplit(services[name]["environment"]["REDIS_URL"])
        assert (url.scheme, url.hostname, url.port, url.password) == ("redis", "redis", 6379, SECRETS["REDIS_PASSWORD"])
        assert "pg0secret1@postgres:5432" in services[name]["environment"]["DATABASE_URL"]


def _compose_redis_here(tmp_path: Path, port: int) -> tuple[dict, str, str, dict[str, str]]:
    """compose.yaml's Redis as this machine runs it: its command and healthcheck (shell text)
    with the containers' folders under tmp_path (/data: the Redis volume, /homeai: the app's
    data folder), and an environment whose docker-entrypoint.sh (the image's entrypoint) and
    redis-cli reach a redis-server on port. Returns the service, the command, the healthcheck,
    the environment."""
    redis = _interpolate(_load(COMPOSE), {})["services"]["redis"]
    volume, app_data, bin_dir = tmp_path / "redis-volume", tmp_path / "app-data", tmp_path / "bin"
    for folder in (volume, app_data, bin_dir):
        folder.mkdir(exist_ok=True)

    def here(text: str) -> str:
        return text.replace("/homeai/", f"{app_data}/").replace("--dir /data", f"--dir {volume}")

    command = redis["command"]
    assert command[:2] == ["sh", "-c"] and len(command) == 3, command
    check = redis["healthcheck"]["test"]
    assert check[0] == "CMD-SHELL" and len(check) == 2, check
    entry = f'#!/bin/sh\nexec "$@" --port {port} --bind 127.0.0.1 --logfile {tmp_path}/redis.log\n'
    (bin_dir / "docker-entrypoint.sh").write_text(entry)
    (bin_dir / "redis-cli").write_text(f'#!/bin/sh\nexec {shutil.which("redis-cli")} -p {port} "$@"\n')
    for script in bin_dir.iterdir():
        script.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return redis, here(command[2]), here(check[1]), env


def _redis_answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def test_compose_redis_asks_for_the_password_the_app_generates(tmp_path):
    """compose.yaml's Redis, run on this machine as its container would run it, on a Redis
    volume that an install from before the password filled: it waits for the app's first start
    to write the password into the data folder, then asks for it (a client without it is
    refused), keeps the volume's data, passes its healthcheck only with the password, and shows
    it on no command line; the app's containers connect with the file their settings name."""
    port = _free_port()
    service, command, healthcheck, env = _compose_redis_here(tmp_path, port)
    assert "redis-data:/data" in service["volumes"] and "./data:/homeai:ro" in service["volumes"]
    assert "requirepass" in command and "redis-server -" in command  # the password comes on stdin
    app_env = _interpolate(_load(COMPOSE), {})["services"]["web"]["environment"]
    assert app_env["REDIS_PASSWORD_FILE"] == "/data/redis_password"
    assert "${HOMEAI_DATA_PATH:-./data}:/data" in _load(COMPOSE)["services"]["web"]["volumes"]
    password_file = tmp_path / "app-data" / "redis_password"

    # The install before: Redis without a password, its append-only file in the volume.
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--appendonly", "yes", "--save", ""]
    before = subprocess.Popen([*argv, "--dir", str(tmp_path / "redis-volume")], stdout=subprocess.DEVNULL)
    old = redis.Redis(port=port, socket_timeout=5)
    try:
        assert wait_until(lambda: _redis_answers(old), timeout=30)
        old.set("homeai:kept", "from before the upgrade")
        old.shutdown()
    except redis.ConnectionError:
        pass  # SHUTDOWN closes the connection
    finally:
        before.wait(timeout=30)

    proc = subprocess.Popen(["sh", "-c", command], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "waiting for the app" in proc.stdout.readline()
        # The app's first start (the migrate service) writes the password: its settings do.
        app_env = dict(
            _clean_env(HOMEAI_DATA_DIR=str(tmp_path / "app-data")),
            REDIS_URL=f"redis://127.0.0.1:{port}/0",
            REDIS_PASSWORD_FILE=str(password_file),
        )
        _in_app(app_env, "settings.REDIS_URL")
        password = password_file.read_text()
        assert (password_file.stat().st_mode & 0o777) == 0o600 and len(password) >= 32

        with_password = redis.Redis(port=port, password=password, socket_timeout=5)
        assert wait_until(lambda: _redis_answers(with_password), timeout=60)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, socket_timeout=5).get("homeai:kept")
        assert with_password.get("homeai:kept") == b"from before the upgrade"
        assert password.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes()

        def healthy(**extra: str) -> bool:
            return subprocess.run(["sh", "-c", healthcheck], env={**env, **extra}, timeout=60).returncode == 0

        assert healthy() and not healthy(REDIS_PASSWORD="not-the-password")
        # The app's clients connect with the password from the file.
        kept = _in_app(app_env, "redis.Redis.from_url(settings.REDIS_URL).get('homeai:kept').decode()")
        assert kept == "from before the upgrade"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _in_app(env: dict[str, str], expression: str) -> str:
    """The value of expression in a process on the app's settings (settings and redis imported)."""
    code = f"import django, redis; django.setup(); from django.conf import settings; print({expression})"
    env = dict(env, DJANGO_SETTINGS_MODULE="homeai.settings")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_worker_compose_runs_one_gpu_worker_against_the_nas():
    """compose.worker.yaml is the NAS's NVIDIA worker (compose.yaml with compose.nvidia.yaml),
    alone, with its own folders, pointed at the NAS's Redis and PostgreSQL."""
    document = _interpolate(_load(COMPOSE_WORKER), WORKER_SECRETS)
    assert set(document["services"]) == {"worker"}
    worker = document["services"]["worker"]
    nas_worker = _interpolate(_merged(), {})["services"]["worker"]
    same = ("image", "build", "command", "init", "read_only", "tmpfs", "security_opt", "cap_drop", "cap_add")
    for key in (*same, "healthcheck", "stop_grace_period", "restart", "deploy"):
        assert worker[key] == nas_worker[key], key
    assert "depends_on" not in worker and "ports" not in worker
    assert {volume.split(":")[1] for volume in worker["volumes"]} == {"/data", "/models"}
    environment = worker["environment"]
    for name, value in WORKER_SECRETS.items():
        assert environment[name] == value
    for name, value in environment.items():
        if name not in WORKER_SECRETS:
            assert value == nas_worker["environment"][name], f"{name}: not the NAS worker's default"
    assert database_config(environment["DATABASE_URL"])["HOST"] == "nas.lan"


def _en_us(value) -> str:
    assert isinstance(value, dict) and isinstance(value.get("en_us"), str) and value["en_us"].strip(), value
    return value["en_us"]


def test_casaos_store_metadata():
    raw = _load(COMPOSE)
    app = raw["x-casaos"]
    for key in ("architectures", "main", "author", "category", "description", "developer", "icon"):
        assert app.get(key), f"x-casaos.{key} is missing"
    for key in ("tagline", "title", "index", "port_map", "scheme", "store_app_id"):
        assert app.get(key), f"x-casaos.{key} is missing"
    assert isinstance(app["port_map"], str) and app["port_map"].isdigit(), "port_map must be a quoted string"
    assert app["category"] == "AI"
    assert app["main"] in raw["services"]
    assert app["store_app_id"] == raw["name"]
    assert set(app["architectures"]) <= {"amd64", "arm64", "arm"} and "amd64" in app["architectures"]
    assert app["scheme"] in ("http", "https") and app["index"].startswith("/")
    for key in ("title", "tagline", "description"):
        _en_us(app[key])
    icon = app["icon"]
    if icon.startswith("data:"):
        header, _, payload = icon.partition(",")
        assert header == "data:image/svg+xml;base64"
        assert base64.b64decode(payload) == (DOCKER / "icon.svg").read_bytes(), "icon differs from docker/icon.svg"
    else:
        assert icon.startswith("https://")

    # The main service publishes port_map on the host (with the default HOMEAI_PORT).
    services = _interpolate(raw, {})["services"]
    published = [str(p).split(":")[0] for p in services[app["main"]].get("ports", [])]
    assert app["port_map"] in published

    # What each service's x-casaos describes exists in that service.
    for name, service in services.items():
        meta = service.get("x-casaos")
        if not meta:
            continue
        mounts = {v.split(":")[1] for v in service.get("volumes", [])}
        for item in meta.get("volumes", []):
            assert item["container"] in mounts, f"{name}: no volume at {item['container']}"
            _en_us(item["description"])
        for item in meta.get("envs", []):
            assert item["container"] in service.get("environment", {}), f"{name}: no variable {item['container']}"
            _en_us(item["description"])
        targets = {str(p).split(":")[-1] for p in service.get("ports", [])}
        for item in meta.get("ports", []):
            assert isinstance(item["container"], str) and item["container"] in targets, f"{name}: {item}"
            _en_us(item["description"])


# Variables the test (or this machine) sets, which must be left to the app's defaults here.
_SET_BY_THE_TEST = ("REDIS_URL", "HOMEAI_QUEUE", "HOMEAI_CHANNEL_PREFIX", "TZ", "LOG_LEVEL", "DEBUG")


def _settings_dump(env: dict[str, str]) -> dict[str, str]:
    code = (
        "import json\n"
        "from django.conf import settings\n"
        "print(json.dumps({k: repr(getattr(settings, k)) for k in dir(settings) if k.isupper()}))\n"
    )
    env = dict(env, DJANGO_SETTINGS_MODULE="homeai.settings")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_compose_defaults_are_the_apps_defaults(tmp_path):
    """Started by the compose file with nothing set, the app gets the settings it has without it."""
    data, models = tmp_path / "data", tmp_path / "models"
    base = _clean_env(HOMEAI_DATA_DIR=str(data), HOMEAI_MODELS_DIR=str(models))
    for name in _SET_BY_THE_TEST:
        base.pop(name, None)
    environment = _interpolate(_load(COMPOSE), {})["services"]["web"]["environment"]
    compose = dict(base)
    for name, value in environment.items():
        if value is None or name in ("PUID", "PGID", "PORT", "REDIS_URL", "REDIS_PASSWORD_FILE"):
            continue  # not settings, or (Redis) the compose file's own service by design
        compose[name] = str(value).replace("/data/", f"{data}/").replace("/models/", f"{models}/")
    expected, got = _settings_dump(base), _settings_dump(compose)
    differ = {k: (expected.get(k), got.get(k)) for k in expected.keys() | got.keys() if expected.get(k) != got.get(k)}
    assert differ == {}, "compose.yaml's defaults differ from the app's (app, compose):"


# --- The entrypoint, run natively -------------------------------------------------------------


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without HomeAI's variables, plus the test's."""
    drop = {"REDIS_URL", "DATABASE_URL", "SECRET_KEY", "PORT", "HOST", "PUID", "PGID", "ALLOWED_HOSTS"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOMEAI_", "DJANGO_")) and k not in drop}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        HOMEAI_APP_DIR=str(ROOT),
        HOMEAI_MODELS_DIR=str(settings.MODELS_DIR),
        REDIS_URL=REDIS_URL,
        HOMEAI_QUEUE=QUEUE,
        HOMEAI_CHANNEL_PREFIX=QUEUE,
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def _run(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    # Started from elsewhere than the checkout: the entrypoint changes to HOMEAI_APP_DIR itself.
    return subprocess.run(
        [str(ENTRYPOINT), *args], cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=timeout
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_migrate_prepare_model_manage_and_passthrough(tmp_path):
    env = _clean_env(HOMEAI_DATA_DIR=str(tmp_path))

    result = _run("migrate", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "homeai.sqlite3").is_file()
    assert (tmp_path / "secret_key").is_file()

    result = _run("prepare-model", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Model: {settings.MODELS_DIR}" in result.stdout

    result = _run("manage", "showmigrations", "--plan", env=env)
    assert result.returncode == 0, result.stderr
    assert "[ ]" not in result.stdout and "[X]" in result.stdout

    result = _run("python", "-c", "import os; print(os.getcwd(), os.environ['DJANGO_SETTINGS_MODULE'])", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(ROOT), "homeai.settings"]

    result = _run("healthcheck", "nonsense", env=env)
    assert result.returncode == 1 and "unknown role" in result.stderr


class _Health(BaseHTTPRequestHandler):
    """A stand-in web server: /healthz/web and /healthz answer as configured."""

    answers: dict[str, tuple[int, dict]] = {}

    def do_GET(self):  # noqa: N802 (the standard library's name)
        status, body = self.answers.get(self.path, (404, {}))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def _serve(host: str, answers: dict[str, tuple[int, dict]]) -> ThreadingHTTPServer:
    handler = type("Handler", (_Health,), {"answers": answers})
    server = ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(
    ("host", "bound", "answers", "healthy"),
    [
        # The address daphne binds, as a client reaches it.
        ("127.0.0.2", "127.0.0.2", {"/healthz/web": (200, {"status": "ok"})}, True),
        ("0.0.0.0", "127.0.0.1", {"/healthz/web": (200, {"status": "ok"})}, True),
        ("0.0.0.0", "127.0.0.2", {"/healthz/web": (200, {"status": "ok"})}, False),
        # /healthz/web, not /healthz: a stopped worker does not make the web unhealthy.
        ("127.0.0.1", "127.0.0.1", {"/healthz/web": (200, {"status": "ok"}), "/healthz": (503, {})}, True),
        ("127.0.0.1", "127.0.0.1", {"/healthz/web": (503, {"status": "error"})}, False),
        ("127.0.0.1", "127.0.0.1", {"/healthz": (200, {"status": "ok"})}, False),
    ],
)
def test_web_healthcheck_calls_healthz_web_on_the_bound_host(tmp_path, host, bound, answers, healthy):
    server = _serve(bound, answers)
    try:
        env = _clean_env(HOMEAI_DATA_DIR=str(tmp_path), HOST=host, PORT=str(server.server_address[1]))
        result = _run("healthcheck", "web", env=env, timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    assert (result.returncode == 0) is healthy, result.stdout + result.stderr


def test_healthcheck_roles_other_than_web_and_worker_are_unhealthy(tmp_path):
    env = _clean_env(HOMEAI_DATA_DIR=str(tmp_path))
    for role in ("nonsense", "init", "migrate"):
        result = _run("healthcheck", role, env=env, timeout=60)
        assert result.returncode == 1 and "unknown role" in result.stderr, role


def test_a_missing_model_stops_prepare_model_with_a_message(tmp_path):
    env = _clean_env(HOMEAI_DATA_DIR=str(tmp_path), HOMEAI_MODEL_PATH=str(tmp_path / "absent.gguf"))
    result = _run("prepare-model", env=env)
    assert result.returncode != 0
    assert "absent.gguf" in result.stderr


def _healthz(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.integration
def test_init_then_web_and_worker_are_healthy(tmp_path):
    """What compose runs: the one-shot init, then web and worker; /healthz turns healthy."""
    port = _free_port()
    env = _clean_env(HOMEAI_DATA_DIR=str(tmp_path / "data"), HOST="127.0.0.1", PORT=str(port), HOMEAI_SLOTS="2")

    result = _run("init", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Model:" in result.stdout

    procs: dict[str, subprocess.Popen] = {}
    logs = {name: tmp_path / f"{name}.log" for name in ("web", "worker")}
    try:
        for name in ("web", "worker"):
            with logs[name].open("wb") as log:
                procs[name] = subprocess.Popen(
                    [str(ENTRYPOINT), name], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
                )
        url = f"http://127.0.0.1:{port}/healthz"
        body: dict = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for name, proc in procs.items():
                assert proc.poll() is None, f"{name} exited:\n{logs[name].read_text()[-3000:]}"
            try:
                status, body = _healthz(url)
            except (OSError, ValueError):
                status = 0
            if status == 200 and body["database"]["ok"] and body["workers"]["count"] >= 1:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"/healthz never turned healthy: {body}\n{logs['web'].read_text()[-3000:]}")
        assert body["status"] == "ok" and body["redis"]["ok"] is True
        assert body["model"]["present"] is True

        for role in ("web", "worker"):
            check = _run("healthcheck", role, env=env, timeout=60)
            assert check.returncode == 0, f"healthcheck {role}: {check.stdout}{check.stderr}"
    finally:
        for proc in procs.values():
            _stop(proc)
    # The role's server was exec'd: SIGTERM reached it, not a shell in between.
    assert procs["web"].returncode in (0, -signal.SIGTERM), logs["web"].read_text()[-3000:]


def test_root_switches_to_puid_and_pgid_only_when_asked():
    probe = ("sh", "-c", 'echo "$(id -u):$(id -g):$HOME"')
    data = Path(tempfile.mkdtemp(prefix="homeai-docker-test-"))
    try:
        models = data / "models"
        models.mkdir()
        (models / "own.gguf").write_bytes(b"GGUF")
        env = _clean_env(HOMEAI_DATA_DIR=str(data), HOMEAI_MODELS_DIR=str(models))
        me = f"{os.getuid()}:{os.getgid()}"

        # Natively the variable is unset: no switch, no ownership changes.
        result = _run(*probe, env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"{me}:")

        asked = dict(env, HOMEAI_DROP_PRIVILEGES="1", PUID="54321", PGID="54322", HOMEAI_USER="homeai-test-absent")
        result = _run(*probe, env=asked)
        assert result.returncode == 0, result.stderr
        if os.getuid() == 0:
            assert result.stdout.strip() == f"54321:54322:{data}"
            for path in (data, models, models / "own.gguf"):
                assert (path.stat().st_uid, path.stat().st_gid) == (54321, 54322), path
            bad = _run(*probe, env=dict(asked, PUID="me"))
            assert bad.returncode == 1 and "PUID=me" in bad.stderr
        else:
            # Not root (docker run --user, or a developer's shell): runs as is.
            assert result.stdout.startswith(f"{me}:")
            assert data.stat().st_uid == os.getuid()
    finally:
        shutil.rmtree(data, ignore_errors=True)
