"""A HomeAI of its own for the pull tests (tests/stack.py: its own Redis, daphne and worker on
the test database), whose worker pulls into a temporary models folder (never the suite's or
anyone's) from Debian's docker-registry behind a counting proxy, and from a Hugging Face
stand-in (HF_ENDPOINT). Import the fixtures into a test module to use them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infra.pull.servers import CountingProxy, HfStandIn, Registry
from tests.stack import Stack


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    handle = Registry(tmp_path_factory.mktemp("registry"))
    handle.start()
    proxy = CountingProxy(handle.url)
    yield handle, proxy
    proxy.close()
    handle.stop()


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pulled-models")


@pytest.fixture(scope="module")
def hf_hub():
    server = HfStandIn()
    yield server
    server.close()


@pytest.fixture(scope="module")
def stack(django_db_setup, tmp_path_factory, registry, models_dir, hf_hub):
    _, proxy = registry
    env = {
        "HOMEAI_MODELS_DIR": str(models_dir),
        "HOMEAI_PULL_REGISTRY": proxy.url,
        "HF_ENDPOINT": hf_hub.url,  # huggingface_hub's own setting, read by the worker's library
        "HOMEAI_BUNDLED_MODELS": "0",
        "HOMEAI_MAX_PULLS": "1",
    }
    handle = Stack(tmp_path_factory.mktemp("pull-redis"), env=env, name="pull", concurrency=2)
    handle.start()
    yield handle
    handle.stop()
