"""The model body's connections honour the environment's proxy settings as httpx does for the
manifest: a household behind a proxy pulls both through it."""

import urllib3

from infra.pull import net


def test_a_body_goes_through_the_proxy_the_environment_names(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.home.arpa:3128")
    monkeypatch.setenv("NO_PROXY", "nas.home.arpa")
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    through = net.pool("https://registry.ollama.ai/v2/library/x/blobs/sha256:0")
    assert isinstance(through, urllib3.ProxyManager)
    assert through.proxy.host == "proxy.home.arpa"
    direct = net.pool("https://nas.home.arpa/v2/library/x/blobs/sha256:0")
    assert not isinstance(direct, urllib3.ProxyManager)
