"""Ollama's library over the OCI distribution protocol: the manifest, then each blob by digest.

An Ollama model's manifest (Docker's schema 2 media type) names a config blob and its layers
by media type: the model (a GGUF), and beside it template, params, license and system texts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import httpx

from infra.pull import blobs, net, store
from infra.pull.errors import PullCancelled, PullError
from infra.pull.names import OllamaName

MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
    )
)
MODEL = "application/vnd.ollama.image.model"
# The texts kept beside the model, by the key the sidecar keeps them under.
TEXT_LAYERS = {
    "application/vnd.ollama.image.template": "template",
    "application/vnd.ollama.image.params": "params",
    "application/vnd.ollama.image.license": "license",
    "application/vnd.ollama.image.system": "system",
}
TEXT_LIMIT = 4 * 2**20  # a text layer larger than this is no template or licence


def registry_url(name: OllamaName, default: str) -> str:
    """The registry a name is pulled from: its own host over https, else the configured one."""
    return f"https://{name.host}" if name.host else default.rstrip("/")


def _get(client: httpx.Client, url: str, what: str, **kwargs) -> httpx.Response:
    try:
        response = client.get(url, **kwargs)
    except httpx.HTTPError as exc:
        raise unreachable(url, exc) from exc
    return response


def unreachable(url: str, exc: Exception) -> PullError:
    host = httpx.URL(url).host
    return PullError(
        "unreachable",
        f"The registry at {host} does not answer ({exc.__class__.__name__}): check the server's network "
        "connection, then pull again; a download stopped part-way resumes where it stopped.",
        status=502,
    )


def manifest(client: httpx.Client, base: str, name: OllamaName) -> dict:
    """The model's manifest, or PullError not_found / registry_error with a sentence."""
    url = f"{base}/v2/{name.repository}/manifests/{name.tag}"
    response = _get(client, url, "the manifest", headers={"Accept": MANIFEST_TYPES})
    if response.status_code == 404:
        raise PullError(
            "not_found",
            f"There is no model {name.short} in the registry at {httpx.URL(base).host}: "
            "check its spelling (names look like llama3.2 or qwen3:4b).",
            status=404,
        )
    if response.status_code in (401, 403):
        raise PullError(
            "registry_error",
            f"The registry at {httpx.URL(base).host} refused to give {name.short} without credentials; "
            "HomeAI pulls public models only.",
            status=502,
        )
    if response.status_code != 200:
        raise PullError(
            "registry_error",
            f"The registry at {httpx.URL(base).host} answered {response.status_code} for {name.short}'s manifest.",
            status=502,
        )
    try:
        body = response.json()
        layers = body["layers"]
        if not isinstance(layers, list) or not all(
            isinstance(x, dict) and "digest" in x and "size" in x for x in layers
        ):
            raise ValueError
    except (ValueError, KeyError, TypeError) as exc:
        raise PullError(
            "registry_error", f"The registry's manifest for {name.short} is not one HomeAI can read.", status=502
        ) from exc
    if not any(layer.get("mediaType") == MODEL for layer in layers):
        raise PullError(
            "not_gguf", f"{name.short} has no model layer ({MODEL}): it is not an Ollama model.", status=422
        )
    return body


def pull(
    name: OllamaName,
    models_dir: Path,
    *,
    registry: str,
    status: Callable[[str], None],
    progress: blobs.Progress,
    cancelled: Callable[[], bool],
    client: httpx.Client | None = None,
) -> Path:
    """Pull one Ollama model into models_dir; its installed path.

    1. "pulling manifest": the manifest (not found, unreadable or without a model layer: an error).
    2. Room for the layers not yet on disk (disk_full otherwise).
    3. Each layer by digest (blobs.fetch: partial file, Range resume, sha256), the model layer
       to a partial file, the small texts in memory.
    4. "verifying sha256 digest", GGUF's magic checked; "writing manifest": the sidecar, then
       the model renamed into place.
    A model already pulled whose digest the registry still names is not downloaded again.
    """
    base = registry_url(name, registry)
    own = client is None
    client = client or net.client()
    partial: Path | None = None
    try:
        status("pulling manifest")
        body = manifest(client, base, name)
        model_layer = next(layer for layer in body["layers"] if layer.get("mediaType") == MODEL)
        target = models_dir / name.file_name
        # Pulled before, and the registry's model is still the same: nothing to download again
        # (the small layers are read again, in case they changed).
        current = store.held_digest(target) == model_layer["digest"]
        partial = store.partial_path(models_dir, model_layer["digest"])
        have = partial.stat().st_size if partial.exists() else 0
        if not current:
            store.check_room(models_dir, max(int(model_layer["size"]) - have, 0))
        texts: dict[str, str] = {}
        for layer in body["layers"]:
            digest, size = str(layer["digest"]), int(layer["size"])
            url = f"{base}/v2/{name.repository}/blobs/{digest}"
            status(f"pulling {digest.removeprefix('sha256:')[:12]}")
            if layer is model_layer and current:
                progress(digest, size, size)
            elif layer is model_layer:
                try:
                    blobs.fetch(
                        url,
                        digest=digest,
                        size=size,
                        partial=partial,
                        what=name.short,
                        progress=progress,
                        cancelled=cancelled,
                    )
                except net.BodyError as exc:
                    if cancelled():  # stopped while the download waited: a cancel, not an outage
                        raise PullCancelled(name.short) from exc
                    raise unreachable(url, exc) from exc
            elif (key := TEXT_LAYERS.get(layer.get("mediaType", ""))) and size <= TEXT_LIMIT:
                progress(digest, size, 0)
                if cancelled():
                    raise PullCancelled(name.short)
                response = _get(client, url, key)
                if response.status_code != 200:
                    raise PullError(
                        "registry_error",
                        f"The registry answered {response.status_code} for {name.short}'s {key}.",
                        status=502,
                    )
                blobs.check_digest(digest, hashlib.sha256(response.content).hexdigest(), f"{name.short}'s {key}")
                texts[key] = response.content.decode("utf-8", "replace")
                progress(digest, size, size)
        status("verifying sha256 digest")  # each blob's digest was checked as it arrived
        if not current:
            try:
                store.check_gguf(partial, name.short)
            except PullError:
                partial.unlink(missing_ok=True)
                raise
        status("writing manifest")
        sidecar = {"name": name.short, "source": f"{base}/{name.repository}:{name.tag}", "manifest": body, **texts}
        if current:
            store.write_sidecar(target, sidecar)
            return target
        return store.install(models_dir, partial, name.file_name, sidecar)
    except PullCancelled:
        if partial is not None:  # a cancelled pull leaves nothing (a crash leaves its partial to resume)
            partial.unlink(missing_ok=True)
        raise PullCancelled(name.short) from None
    finally:
        if own:
            client.close()
