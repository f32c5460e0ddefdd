"""Real servers for the pull tests: Debian's docker-registry (the CNCF distribution registry)
on a spare port, a push of a GGUF into it in Ollama's manifest layout (plain HTTP OCI push), a
counting proxy that can hold a download half-way, and a stand-in for Hugging Face's file
endpoints (it serves files and headers; huggingface_hub does the protocol)."""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
from gguf import GGUFWriter

from tests.support import free_port, spawn, wait_until

REGISTRY = shutil.which("docker-registry") or "/usr/bin/docker-registry"
MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_TYPE = "application/vnd.docker.container.image.v1+json"


def tiny_gguf(path: Path, n_floats: int = 256 * 1024) -> Path:
    """A small GGUF file (a header and one f32 tensor, about 4 bytes per float): enough to be a
    GGUF, far too little to be a model."""
    writer = GGUFWriter(str(path), "llama")
    writer.add_name("Tiny Test")
    writer.add_tensor("token_embd.weight", np.arange(n_floats, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


class Registry:
    """docker-registry serving plain HTTP on 127.0.0.1, storing in its own folder."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        config = self.directory / "config.yml"
        config.write_text(
            "version: 0.1\n"
            "log: {level: warn}\n"
            f"storage: {{filesystem: {{rootdirectory: {self.directory / 'storage'}}}, delete: {{enabled: true}}}}\n"
            f"http: {{addr: '127.0.0.1:{self.port}'}}\n"
        )
        self.proc = spawn("pull-registry", [REGISTRY, "serve", str(config)])

        def up() -> bool:
            try:
                return httpx.get(self.url + "/v2/", timeout=2).status_code == 200
            except httpx.HTTPError:
                return self.proc.poll() is not None

        if not wait_until(up, timeout=30) or self.proc.poll() is not None:
            raise RuntimeError("docker-registry did not start; see data/test/logs/pull-registry.log")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def _push_blob(client: httpx.Client, base: str, repo: str, data_or_path: bytes | Path) -> tuple[str, int]:
    """OCI push of one blob (POST an upload, PUT it whole with its digest); (digest, size)."""
    if isinstance(data_or_path, Path):
        hashed = hashlib.sha256()
        with open(data_or_path, "rb") as f:
            while block := f.read(1 << 20):
                hashed.update(block)
        size = data_or_path.stat().st_size
    else:
        hashed, size = hashlib.sha256(data_or_path), len(data_or_path)
    digest = f"sha256:{hashed.hexdigest()}"
    if client.head(f"{base}/v2/{repo}/blobs/{digest}").status_code == 200:
        return digest, size
    started = client.post(f"{base}/v2/{repo}/blobs/uploads/")
    assert started.status_code == 202, started.text
    # The upload URL carries its own state in its query; the digest is added to it.
    location = httpx.URL(base).join(started.headers["Location"]).copy_merge_params({"digest": digest})
    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
    if isinstance(data_or_path, Path):
        with open(data_or_path, "rb") as f:
            done = client.put(location, content=iter(lambda: f.read(1 << 20), b""), headers=headers)
    else:
        done = client.put(location, content=data_or_path, headers=headers)
    assert done.status_code == 201, done.text
    return digest, size


def push_ollama_model(
    base: str, repo: str, tag: str, gguf: Path, *, template: str = "{{ .Prompt }}", params: dict | None = None
) -> dict:
    """Push a GGUF as Ollama's registry holds a model: a config blob, the model layer, and
    template, params and license layers, under a schema 2 manifest; the manifest."""
    with httpx.Client(timeout=120) as client:
        layers = []
        model_digest, model_size = _push_blob(client, base, repo, gguf)
        layers.append({"mediaType": "application/vnd.ollama.image.model", "digest": model_digest, "size": model_size})
        for media, text in (
            ("application/vnd.ollama.image.template", template),
            ("application/vnd.ollama.image.params", json.dumps(params or {"stop": ["<|im_end|>"]})),
            ("application/vnd.ollama.image.license", "Apache License 2.0 (test copy)"),
        ):
            digest, size = _push_blob(client, base, repo, text.encode())
            layers.append({"mediaType": media, "digest": digest, "size": size})
        config = json.dumps(
            {"model_format": "gguf", "model_family": "llama", "rootfs": {"type": "layers", "diff_ids": []}}
        ).encode()
        config_digest, config_size = _push_blob(client, base, repo, config)
        manifest = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {"mediaType": CONFIG_TYPE, "digest": config_digest, "size": config_size},
            "layers": layers,
        }
        put = client.put(
            f"{base}/v2/{repo}/manifests/{tag}", content=json.dumps(manifest), headers={"Content-Type": MANIFEST_TYPE}
        )
        assert put.status_code == 201, put.text
        return manifest


def flip_blob_byte(storage: Path, digest: str, offset: int = 1000) -> None:
    """Damage a blob in the registry's storage (the registry serves it as it is)."""
    hexd = digest.removeprefix("sha256:")
    path = storage / "docker/registry/v2/blobs/sha256" / hexd[:2] / hexd / "data"
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: CountingProxy

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.forward(self)

    def do_HEAD(self) -> None:
        self.server.forward(self)


class CountingProxy(ThreadingHTTPServer):
    """Forwards GET and HEAD to `target`, counting the blob bytes it sends back. hold_after(n):
    the next blob response stops after n bytes until release() (the test does something meanwhile)."""

    daemon_threads = True

    def __init__(self, target: str):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.target = httpx.URL(target)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.blob_bytes = 0
        self.ranges: list[str] = []
        self._hold_at: int | None = None
        self.held = threading.Event()
        self._release = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def hold_after(self, n: int) -> None:
        self._hold_at, self._release = n, threading.Event()
        self.held.clear()

    def release(self) -> None:
        self._hold_at = None
        self._release.set()

    def close(self) -> None:
        self.release()
        self.shutdown()
        self.server_close()

    def forward(self, handler: _Handler) -> None:
        conn = http.client.HTTPConnection(self.target.host, self.target.port, timeout=60)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(handler.command, handler.path, headers=headers)
        upstream = conn.getresponse()
        is_blob = "/blobs/sha256:" in handler.path and handler.command == "GET"
        if is_blob:
            self.ranges.append(handler.headers.get("Range", ""))
        handler.send_response(upstream.status)
        for key, value in upstream.getheaders():
            if key.lower() not in ("connection", "transfer-encoding"):
                handler.send_header(key, value)
        handler.send_header("Connection", "close")
        handler.end_headers()
        sent = 0
        try:
            while block := upstream.read(64 * 1024):
                if is_blob and self._hold_at is not None and sent + len(block) > self._hold_at:
                    block = block[: self._hold_at - sent]
                    handler.wfile.write(block)
                    handler.wfile.flush()
                    with self._lock:
                        self.blob_bytes += len(block)
                    self.held.set()
                    self._release.wait(120)
                    return  # the connection is cut here: what was sent is all the client gets
                handler.wfile.write(block)
                sent += len(block)
                if is_blob:
                    with self._lock:
                        self.blob_bytes += len(block)
        except OSError:
            pass
        finally:
            conn.close()
            handler.close_connection = True


class _HfHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HfStandIn

    def log_message(self, *args) -> None:
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _json(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status == 404:
            self.send_header("X-Error-Code", "RepoNotFound")
        self.end_headers()
        self.wfile.write(body)

    def _serve(self, body: bool) -> None:
        path = self.path.split("?")[0]
        if m := re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/[^/]+)?", path):
            repo = self.server.repos.get(m.group(1))
            if repo is None:
                return self._json(404, {"error": "Repository not found"})
            siblings = [
                {"rfilename": name, "size": size, "lfs": {"sha256": sha, "size": size, "pointerSize": 134}}
                for name, (_, sha, size) in repo.items()
            ]
            return self._json(
                200, {"id": m.group(1), "modelId": m.group(1), "sha": self.server.commit, "siblings": siblings}
            )
        if m := re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
            repo = self.server.repos.get(m.group(1))
            entry = repo.get(m.group(3)) if repo else None
            if entry is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound" if repo else "RepoNotFound")
                self.send_header("Content-Length", "0")
                return self.end_headers()
            file, sha, size = entry
            start = 0
            if rng := re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", "")):
                start = int(rng.group(1))
            self.send_response(206 if start else 200)
            self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Repo-Commit", self.server.commit)
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(size - start))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            self.end_headers()
            if body:
                self.server.ranges.append(self.headers.get("Range", ""))
                with open(file, "rb") as f:
                    f.seek(start)
                    while block := f.read(64 * 1024):
                        self.wfile.write(block)
                        self.server.bytes_sent += len(block)
            return None
        self._json(404, {"error": "not found"})
        return None


class HfStandIn(ThreadingHTTPServer):
    """Hugging Face's metadata and resolve endpoints over local files: add(repo, path)."""

    daemon_threads = True
    commit = "0123456789abcdef0123456789abcdef01234567"

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _HfHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.repos: dict[str, dict[str, tuple[Path, str, int]]] = {}
        self.bytes_sent = 0
        self.ranges: list[str] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def add(self, repo: str, path: Path, name: str | None = None, sha: str | None = None) -> None:
        real = sha or hashlib.sha256(path.read_bytes()).hexdigest()
        self.repos.setdefault(repo, {})[name or path.name] = (path, real, path.stat().st_size)

    def close(self) -> None:
        self.shutdown()
        self.server_close()
