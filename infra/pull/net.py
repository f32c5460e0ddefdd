"""The pull's HTTP connections: one TLS context for the process, the httpx client for manifests
and small layers, and urllib3 pools for a model's body.

Two clients, each where it wins (bench/pull.py: 253 MB from a local registry on 2 cores):
httpx reads 64 KB at a time through h11, which with the sha256 beside it ran at 0.6x of
`curl -o`; urllib3 reading 256 KB at a time (http.client underneath) ran at 1.0x. Both check
certificates against certifi's bundle through one context, made once: building it cost 20-40 ms
per client, a tenth of a 250 MB pull over loopback.
"""

from __future__ import annotations

import functools
import ssl
import threading
import urllib.request
from urllib.parse import urlsplit

import certifi
import httpx
import urllib3

TIMEOUT_S, CONNECT_S = 30.0, 10.0
# Redirects only (a registry sends blobs to its CDN; credentials are dropped across hosts): a
# connection or read that fails is the caller's sentence, and a pull resumes where it stopped.
RETRIES = urllib3.Retry(total=5, connect=0, read=0, status=0, other=0, redirect=5, raise_on_redirect=True)
BodyError = urllib3.exceptions.HTTPError  # what a body download that cannot go on raises
_pools: dict[str | None, urllib3.PoolManager] = {}
_pools_lock = threading.Lock()


@functools.cache
def tls() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certifi.where())


def client() -> httpx.Client:
    """A client for manifests and small layers: redirects followed, the environment's proxies."""
    return httpx.Client(follow_redirects=True, verify=tls(), timeout=httpx.Timeout(TIMEOUT_S, connect=CONNECT_S))


def pool(url: str) -> urllib3.PoolManager:
    """Connections for a body at url: through the proxy the environment names for its scheme
    (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY; not for NO_PROXY's hosts), as httpx honours them."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and urllib.request.proxy_bypass(parts.hostname or ""):
        proxy = None
    with _pools_lock:
        if proxy not in _pools:
            options = {
                "timeout": urllib3.Timeout(connect=CONNECT_S, read=TIMEOUT_S),
                "retries": RETRIES,
                "ssl_context": tls(),
            }
            _pools[proxy] = urllib3.ProxyManager(proxy, **options) if proxy else urllib3.PoolManager(**options)
        return _pools[proxy]
