"""The pull tests' servers: one real registry for the module, a tiny GGUF pushed into it."""

from __future__ import annotations

import pytest

from tests.infra.pull.servers import CountingProxy, HfStandIn, Registry, push_ollama_model, tiny_gguf


@pytest.fixture(scope="session")
def oci_registry(tmp_path_factory):
    registry = Registry(tmp_path_factory.mktemp("registry"))
    registry.start()
    yield registry
    registry.stop()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A 1 MB GGUF."""
    return tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture
def proxy(oci_registry):
    server = CountingProxy(oci_registry.url)
    yield server
    server.close()


@pytest.fixture
def hf_hub():
    server = HfStandIn()
    yield server
    server.close()


@pytest.fixture
def pushed(oci_registry, tiny_model):
    """push(repo, tag, gguf=tiny) -> the manifest."""

    def push(repo: str, tag: str = "latest", gguf=None, **kwargs) -> dict:
        return push_ollama_model(oci_registry.url, repo, tag, gguf or tiny_model, **kwargs)

    return push
