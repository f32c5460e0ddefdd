"""A model's size and the start of its GGUF, before it is pulled: what the forecast reads (the
header holds the architecture and tensor shapes; the vocabulary makes it a few MB at most)."""

from __future__ import annotations

import httpx
from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils import build_hf_headers

from infra.pull import hf, net, oci
from infra.pull.errors import PullError
from infra.pull.names import HfName, OllamaName, parse

HEAD_BYTES = 16 * 2**20  # a GGUF's header is well inside this


def _range(client: httpx.Client, url: str, limit: int, what: str, headers: dict | None = None) -> bytes:
    """The first `limit` bytes of url (a server without ranges sends it all: only those are read)."""
    out = bytearray()
    try:
        with client.stream("GET", url, headers={**(headers or {}), "Range": f"bytes=0-{limit - 1}"}) as response:
            if response.status_code not in (200, 206):
                raise PullError(
                    "registry_error", f"The registry answered {response.status_code} for {what}.", status=502
                )
            for block in response.iter_bytes():
                out += block
                if len(out) >= limit:
                    break
    except httpx.HTTPError as exc:
        raise oci.unreachable(url, exc) from exc
    return bytes(out[:limit])


def head(name: str, *, registry: str, hf_endpoint: str | None = None, limit: int = HEAD_BYTES) -> tuple[int, bytes]:
    """(the model file's size, its first `limit` bytes); PullError as a pull would raise it."""
    parsed = parse(name)
    with net.client() as client:
        if isinstance(parsed, OllamaName):
            base = oci.registry_url(parsed, registry)
            body = oci.manifest(client, base, parsed)
            layer = next(layer for layer in body["layers"] if layer.get("mediaType") == oci.MODEL)
            url = f"{base}/v2/{parsed.repository}/blobs/{layer['digest']}"
            return int(layer["size"]), _range(client, url, limit, parsed.short)
        assert isinstance(parsed, HfName)
        try:
            info = HfApi(endpoint=hf_endpoint).model_info(parsed.repo, files_metadata=True)
        except (HfHubHTTPError, httpx.HTTPError, OSError) as exc:
            raise hf.hub_error(parsed, exc) from exc
        files = {s.rfilename: s for s in info.siblings or []}
        chosen = hf.pick(parsed, files)
        sibling = files[chosen]
        size = int(sibling.size or (sibling.lfs.size if sibling.lfs else 0) or 0)
        url = hf_hub_url(parsed.repo, chosen, revision=info.sha, endpoint=hf_endpoint)
        return size, _range(client, url, limit, parsed.short, headers=build_hf_headers())
