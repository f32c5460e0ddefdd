"""GGUF files from Hugging Face, through huggingface_hub: its metadata call picks the file, its
download (ETag, resume of the `.incomplete` file, retries) fetches it; HF_ENDPOINT and HF_TOKEN
are the library's own. HomeAI only checks the result: the sha256 the repository lists for the
file, and GGUF's magic."""

from __future__ import annotations

import functools
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from infra.pull import blobs, store
from infra.pull.errors import PullCancelled, PullError
from infra.pull.names import HfName

PREFERRED_QUANT = "Q4_K_M"  # Ollama's pick when a name gives no quantization


class _Progress:
    """What huggingface_hub takes for a progress bar (its tqdm_class): bytes go to the pull's
    callback, and a cancel stops the download between chunks."""

    def __init__(
        self, report: Callable[[int, int], None], cancelled: Callable[[], bool], *, total=None, initial=0, **_
    ):
        self.report, self.cancelled = report, cancelled
        self.total, self.n = int(total or 0), int(initial or 0)
        report(self.total, self.n)

    def update(self, n: int = 1) -> None:
        self.n += n
        self.report(self.total, self.n)
        if self.cancelled():
            raise PullCancelled("the file")

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def pick(name: HfName, files: dict[str, dict]) -> str:
    """The GGUF file a name means: the named one, the one of its quantization, else Q4_K_M's or the first."""
    ggufs = sorted(f for f in files if f.lower().endswith(".gguf") and "/" not in f)
    if name.file:
        if name.file not in files:
            raise PullError("not_found", f"The repository {name.repo} has no file {name.file}.", status=404)
        return name.file
    if not ggufs:
        raise PullError(
            "not_gguf", f"The repository {name.repo} holds no GGUF file: HomeAI runs GGUF models only.", status=422
        )
    wanted = (name.quant or PREFERRED_QUANT).lower()
    matching = [
        f for f in ggufs if f.lower().removesuffix(".gguf").endswith((f"-{wanted}", f".{wanted}", f"_{wanted}"))
    ]
    if matching:
        return matching[0]
    if name.quant:
        listing = ", ".join(ggufs[:12])
        raise PullError(
            "not_found", f"The repository {name.repo} has no {name.quant} file; its GGUF files: {listing}.", status=404
        )
    return ggufs[0]


def hub_error(name: HfName, exc: Exception) -> PullError:
    if isinstance(exc, GatedRepoError):
        return PullError(
            "registry_error",
            f"{name.repo} is gated on Hugging Face: accept its terms there and set HF_TOKEN on the worker.",
            status=403,
        )
    if isinstance(exc, RepositoryNotFoundError | RevisionNotFoundError | EntryNotFoundError):
        return PullError(
            "not_found",
            f"There is no Hugging Face repository {name.repo} (or it is private: set HF_TOKEN on the worker).",
            status=404,
        )
    if isinstance(exc, HfHubHTTPError) and exc.response is not None and exc.response.status_code >= 500:
        return PullError(
            "registry_error",
            f"Hugging Face answered {exc.response.status_code} for {name.repo}: try again later.",
            status=502,
        )
    if isinstance(exc, HfHubHTTPError):
        return PullError(
            "registry_error", f"Hugging Face refused {name.repo}: {str(exc).splitlines()[0][:200]}", status=502
        )
    return PullError(
        "unreachable",
        f"Hugging Face does not answer ({exc.__class__.__name__}): check the server's network connection, "
        "then pull again; a download stopped part-way resumes where it stopped.",
        status=502,
    )


def staging(models_dir: Path, name: HfName) -> Path:
    """The folder huggingface_hub downloads into (its .incomplete file is the partial)."""
    return models_dir / f".pull-hf-{name.repo.replace('/', '--')}"


def pull(
    name: HfName,
    models_dir: Path,
    *,
    status: Callable[[str], None],
    progress: blobs.Progress,
    cancelled: Callable[[], bool],
    endpoint: str | None = None,
) -> Path:
    """Pull one GGUF file of a Hugging Face repository into models_dir; its installed path."""
    status("pulling manifest")
    try:
        info = HfApi(endpoint=endpoint).model_info(name.repo, files_metadata=True)
    except (HfHubHTTPError, httpx.HTTPError, OSError) as exc:
        raise hub_error(name, exc) from exc
    files = {s.rfilename: s for s in info.siblings or []}
    chosen = pick(name, files)
    sibling = files[chosen]
    sha = getattr(sibling.lfs, "sha256", None) if sibling.lfs else None
    size = int(sibling.size or (sibling.lfs.size if sibling.lfs else 0) or 0)
    digest = f"sha256:{sha}" if sha else chosen
    folder = staging(models_dir, name)
    store.check_room(models_dir, size)
    status(f"pulling {sha[:12] if sha else chosen}")

    def report(total: int, completed: int) -> None:
        progress(digest, total or size, completed)

    try:
        path = Path(
            hf_hub_download(
                name.repo,
                chosen,
                revision=info.sha,
                local_dir=folder,
                endpoint=endpoint,
                tqdm_class=functools.partial(_Progress, report, cancelled),
            )
        )
    except PullCancelled:
        shutil.rmtree(folder, ignore_errors=True)
        raise PullCancelled(name.short) from None
    except OSError as exc:
        if (full := store.disk_full(exc)) is not None:
            shutil.rmtree(folder, ignore_errors=True)
            raise full from exc
        raise hub_error(name, exc) from exc
    except (HfHubHTTPError, httpx.HTTPError, LocalEntryNotFoundError) as exc:
        raise hub_error(name, exc) from exc
    status("verifying sha256 digest")
    try:
        if sha:
            hashed = hashlib.sha256()
            with open(path, "rb") as f:
                while block := f.read(blobs.CHUNK):
                    hashed.update(block)
            blobs.check_digest(digest, hashed.hexdigest(), name.short)
        store.check_gguf(path, name.short)
    except PullError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    status("writing manifest")
    sidecar = {"name": name.short, "source": f"hf.co/{name.repo}/{chosen}@{info.sha}", "sha256": sha or ""}
    installed = store.install(models_dir, path, Path(chosen).name, sidecar)
    shutil.rmtree(folder, ignore_errors=True)
    return installed
