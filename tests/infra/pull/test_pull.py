"""Pulls against a real OCI registry (docker-registry) and a Hugging Face stand-in, no Django."""

from __future__ import annotations

import fcntl
import hashlib
import json
import threading

import pytest

from infra.pull import store
from infra.pull.errors import PullCancelled, PullError
from infra.pull.peek import head
from infra.pull.puller import pull
from tests.infra.pull.servers import flip_blob_byte, tiny_gguf


class Record:
    def __init__(self, cancel_at: int | None = None):
        self.statuses: list[str] = []
        self.progress: list[tuple[str, int, int]] = []
        self.cancel_at = cancel_at

    def status(self, text: str) -> None:
        self.statuses.append(text)

    def report(self, digest: str, total: int, completed: int) -> None:
        self.progress.append((digest, total, completed))

    def cancelled(self) -> bool:
        return self.cancel_at is not None and any(c >= self.cancel_at for _, _, c in self.progress)


def _pull(name, folder, registry, record, **kwargs):
    return pull(
        name,
        folder,
        registry=registry,
        status=record.status,
        progress=record.report,
        cancelled=record.cancelled,
        **kwargs,
    )


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir())


def test_it_pulls_an_ollama_model_with_its_layers_and_progress(oci_registry, pushed, tiny_model, tmp_path):
    manifest = pushed("library/tiny", "1m", template="{{ .Prompt }}!")
    record = Record()
    path = _pull("tiny:1m", tmp_path, oci_registry.url, record)

    assert path == tmp_path / "tiny-1m.gguf"
    assert path.read_bytes() == tiny_model.read_bytes()
    model = manifest["layers"][0]
    assert record.statuses[0] == "pulling manifest"
    assert record.statuses[-2:] == ["verifying sha256 digest", "writing manifest"]
    assert f"pulling {model['digest'][7:19]}" in record.statuses
    model_reports = [p for p in record.progress if p[0] == model["digest"]]
    assert model_reports[-1] == (model["digest"], model["size"], model["size"])
    assert [c for _, _, c in model_reports] == sorted(c for _, _, c in model_reports)
    sidecar = store.read_sidecar(path)
    assert sidecar["name"] == "tiny:1m"
    assert sidecar["template"] == "{{ .Prompt }}!"
    assert json.loads(sidecar["params"]) == {"stop": ["<|im_end|>"]}
    assert sidecar["license"].startswith("Apache")
    assert leftovers(tmp_path) == ["tiny-1m.gguf", "tiny-1m.gguf.pull.json"]


def test_an_unknown_name_is_not_found(oci_registry, tmp_path):
    with pytest.raises(PullError) as err:
        _pull("nothing-here:7b", tmp_path, oci_registry.url, Record())
    assert (err.value.code, err.value.status) == ("not_found", 404)
    assert "There is no model nothing-here:7b" in err.value.message
    assert leftovers(tmp_path) == []


def test_a_registry_that_does_not_answer_is_a_sentence(tmp_path):
    with pytest.raises(PullError) as err:
        _pull("tiny", tmp_path, "http://127.0.0.1:9", Record())
    assert err.value.code == "unreachable"
    assert "does not answer" in err.value.message


def test_a_flipped_byte_is_refused_and_nothing_is_kept(oci_registry, pushed, tmp_path_factory, tmp_path):
    damaged = tiny_gguf(tmp_path_factory.mktemp("damaged") / "d.gguf", n_floats=1000)
    manifest = pushed("library/damaged", gguf=damaged)
    flip_blob_byte(oci_registry.directory / "storage", manifest["layers"][0]["digest"])
    with pytest.raises(PullError) as err:
        _pull("damaged", tmp_path, oci_registry.url, Record())
    assert err.value.code == "digest_mismatch"
    assert "does not match its sha256 digest" in err.value.message
    assert leftovers(tmp_path) == []


def test_a_file_that_is_not_gguf_is_refused(oci_registry, pushed, tmp_path_factory, tmp_path):
    text = tmp_path_factory.mktemp("notgguf") / "readme.gguf"
    text.write_bytes(b"this is no model " * 100)
    pushed("library/readme", gguf=text)
    with pytest.raises(PullError) as err:
        _pull("readme", tmp_path, oci_registry.url, Record())
    assert err.value.code == "not_gguf"
    assert leftovers(tmp_path) == []


def test_a_cut_download_resumes_with_a_range_request(oci_registry, pushed, tiny_model, proxy, tmp_path):
    manifest = pushed("library/resumed")
    size = manifest["layers"][0]["size"]
    proxy.hold_after(size // 2)
    threading.Thread(target=lambda: (proxy.held.wait(60), proxy.release()), daemon=True).start()
    with pytest.raises(PullError) as err:
        _pull("resumed", tmp_path, proxy.url, Record())
    assert err.value.code == "unreachable"
    partial = store.partial_path(tmp_path, manifest["layers"][0]["digest"])
    assert partial.stat().st_size == size // 2  # kept for the next pull

    first = proxy.blob_bytes
    record = Record()
    path = _pull("resumed", tmp_path, proxy.url, record)
    second = proxy.blob_bytes - first
    assert second < 0.6 * size
    assert f"bytes={size // 2}-" in proxy.ranges
    assert path.read_bytes() == tiny_model.read_bytes()
    assert not partial.exists()


def test_a_cancelled_pull_removes_its_partial(oci_registry, pushed, tmp_path):
    manifest = pushed("library/cancelled")
    record = Record(cancel_at=1)
    with pytest.raises(PullCancelled):
        _pull("cancelled", tmp_path, oci_registry.url, record)
    assert leftovers(tmp_path) == []
    assert manifest["layers"][0]["size"] > 1


def test_a_full_disk_is_a_sentence(tmp_path):
    free = store.shutil.disk_usage(tmp_path).free
    with pytest.raises(PullError) as err:
        store.check_room(tmp_path, free * 2)
    assert err.value.code == "disk_full"
    assert "free some space" in err.value.message


def test_it_pulls_a_hugging_face_gguf_by_quantization(hf_hub, tiny_model, tmp_path):
    hf_hub.add("someone/Tiny-GGUF", tiny_model, "Tiny-Q8_0.gguf")
    hf_hub.add("someone/Tiny-GGUF", tiny_model, "Tiny-Q4_K_M.gguf")
    record = Record()
    path = _pull("hf.co/someone/Tiny-GGUF:Q8_0", tmp_path, "", record, hf_endpoint=hf_hub.url)
    assert path == tmp_path / "Tiny-Q8_0.gguf"
    assert path.read_bytes() == tiny_model.read_bytes()
    sha = hashlib.sha256(tiny_model.read_bytes()).hexdigest()
    assert record.progress[-1] == (f"sha256:{sha}", tiny_model.stat().st_size, tiny_model.stat().st_size)
    assert store.read_sidecar(path)["name"] == "hf.co/someone/Tiny-GGUF:Q8_0"
    assert leftovers(tmp_path) == ["Tiny-Q8_0.gguf", "Tiny-Q8_0.gguf.pull.json"]
    # Without a quantization, Ollama's pick; a named file as it is.
    assert _pull("hf.co/someone/Tiny-GGUF", tmp_path, "", Record(), hf_endpoint=hf_hub.url).name == "Tiny-Q4_K_M.gguf"


def test_a_hugging_face_file_with_the_wrong_bytes_is_refused(hf_hub, tiny_model, tmp_path):
    hf_hub.add("someone/Bad-GGUF", tiny_model, "Bad-Q4_K_M.gguf", sha="0" * 64)
    with pytest.raises(PullError) as err:
        _pull("hf.co/someone/Bad-GGUF/Bad-Q4_K_M.gguf", tmp_path, "", Record(), hf_endpoint=hf_hub.url)
    assert err.value.code == "digest_mismatch"
    assert leftovers(tmp_path) == []


def test_an_unknown_hugging_face_repository_is_not_found(hf_hub, tmp_path):
    with pytest.raises(PullError) as err:
        _pull("hf.co/nobody/Nothing-GGUF", tmp_path, "", Record(), hf_endpoint=hf_hub.url)
    assert (err.value.code, err.value.status) == ("not_found", 404)


def test_a_peek_reads_the_size_and_the_start_of_the_gguf(oci_registry, pushed, hf_hub, tiny_model):
    manifest = pushed("library/peeked")
    size, start = head("peeked", registry=oci_registry.url, limit=4096)
    assert size == manifest["layers"][0]["size"]
    assert start == tiny_model.read_bytes()[:4096]
    hf_hub.add("someone/Peek-GGUF", tiny_model, "Peek-Q4_K_M.gguf")
    size, start = head("hf.co/someone/Peek-GGUF", registry="", hf_endpoint=hf_hub.url, limit=4096)
    assert (size, start) == (tiny_model.stat().st_size, tiny_model.read_bytes()[:4096])
    with pytest.raises(PullError) as err:
        head("not-there", registry=oci_registry.url)
    assert err.value.code == "not_found"


def test_two_pulls_never_write_one_partial_file_together(oci_registry, pushed, tiny_model, tmp_path):
    manifest = pushed("library/twice")
    partial = store.partial_path(tmp_path, manifest["layers"][0]["digest"])
    with open(partial.with_name(partial.name + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as the first pull holds it while it writes
        with pytest.raises(PullError) as err:
            _pull("twice", tmp_path, oci_registry.url, Record())
    assert err.value.code == "busy"
    assert _pull("twice", tmp_path, oci_registry.url, Record()).read_bytes() == tiny_model.read_bytes()


def test_a_model_pulled_before_is_not_downloaded_again(oci_registry, pushed, tiny_model, proxy, tmp_path):
    manifest = pushed("library/again")
    first = _pull("again", tmp_path, proxy.url, Record())
    sent = proxy.blob_bytes
    record = Record()
    assert _pull("again", tmp_path, proxy.url, record) == first
    model = manifest["layers"][0]
    assert proxy.blob_bytes - sent < model["size"] // 10  # the small layers only
    assert (model["digest"], model["size"], model["size"]) in record.progress
    assert first.read_bytes() == tiny_model.read_bytes()
