"""One blob fetched to a partial file: resumed with a Range request, checked by its sha256 (the
body through net.pool: urllib3, 256 KB reads)."""

from __future__ import annotations

import fcntl
import hashlib
import queue
import threading
from collections.abc import Callable
from pathlib import Path

from infra.pull import net, store
from infra.pull.errors import PullCancelled, PullError

CHUNK = 1 << 20
READ = 256 << 10  # one read of a blob's body: 1 MB reads left the hash thread's cache behind (bench/pull.py)
Progress = Callable[[str, int, int], None]  # (digest, total, completed)


def _hash_of(path: Path) -> tuple[hashlib._Hash, int]:
    """The sha256 state and length of what a partial file holds already."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
            size += len(block)
    return digest, size


class _Hashing:
    """sha256 of what is appended, computed in a thread of its own: hashlib lets go of the GIL
    on large updates, so the hash runs beside the download instead of after each chunk (inline,
    it halved a pull's rate on loopback: bench/pull.py). At most QUEUED chunks wait."""

    QUEUED = 64

    def __init__(self, state: hashlib._Hash):
        self._state = state
        self._blocks: queue.Queue[bytes | None] = queue.Queue(self.QUEUED)
        self._thread = threading.Thread(target=self._run, name="homeai-pull-sha256", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (block := self._blocks.get()) is not None:
            self._state.update(block)

    def update(self, block: bytes) -> None:
        self._blocks.put(block)

    def finish(self) -> hashlib._Hash:
        """The state once every block is hashed (the thread ends)."""
        self._blocks.put(None)
        self._thread.join()
        return self._state


def check_digest(digest: str, got: str, what: str) -> None:
    if got != digest.removeprefix("sha256:"):
        raise PullError(
            "digest_mismatch",
            f"The download of {what} does not match its sha256 digest (the registry sent other bytes "
            "than its manifest names); nothing was kept. Pull again; if it fails again, "
            "the registry's copy is damaged.",
            status=502,
        )


def _fetch(
    url: str,
    *,
    digest: str,
    size: int,
    partial: Path,
    what: str,
    progress: Progress,
    cancelled: Callable[[], bool],
) -> Path:
    """Download url into `partial` (resuming what it holds), check its digest; the partial file.

    1. Hash what the partial holds; ask for the rest with `Range: bytes=N-` (a server that
       answers 200 sends it all again: the partial is started over).
    2. Append and hash each chunk, reporting (digest, size, completed); a cancel stops between
       chunks (the caller removes the partial).
    3. Compare the sha256 with the digest: a mismatch removes the partial (a resume would
       only repeat the bad bytes) and raises digest_mismatch.
    """
    if not digest.startswith("sha256:"):
        raise PullError(
            "registry_error",
            f"The registry names {what} by a {digest.split(':')[0]} digest; HomeAI checks sha256 only.",
            status=502,
        )
    hashed, have = _hash_of(partial) if partial.exists() else (hashlib.sha256(), 0)
    if have > size:
        partial.unlink()
        hashed, have = hashlib.sha256(), 0
    progress(digest, size, have)
    if have < size:
        headers = {"Range": f"bytes={have}-"} if have else {}
        response = net.pool(url).request("GET", url, headers=headers, preload_content=False, decode_content=False)
        try:
            if response.status == 200 and have:
                hashed, have = hashlib.sha256(), 0  # no ranges here: from the start
                mode = "wb"
            elif response.status in (200, 206):
                mode = "ab"
            else:
                raise PullError("registry_error", f"The registry answered {response.status} for {what}.", status=502)
            # Unbuffered: what progress reported is in the file, even if the process dies next.
            hashing = _Hashing(hashed)
            try:
                with open(partial, mode, buffering=0) as out:
                    # One read each (read1): what has arrived is written, even if the rest never comes.
                    while block := response.read1(READ, decode_content=False):
                        if cancelled():
                            raise PullCancelled(what)
                        out.write(block)
                        hashing.update(block)
                        have += len(block)
                        progress(digest, size, have)
            finally:
                hashed = hashing.finish()
        except OSError as exc:
            response.close()
            if (full := store.disk_full(exc)) is not None:
                partial.unlink(missing_ok=True)
                raise full from exc
            raise
        except BaseException:
            response.close()  # part of the body unread: the connection cannot serve another request
            raise
        response.release_conn()
    try:
        check_digest(digest, hashed.hexdigest(), what)
    except PullError:
        partial.unlink(missing_ok=True)
        raise
    return partial


def fetch(
    url: str,
    *,
    digest: str,
    size: int,
    partial: Path,
    what: str,
    progress: Progress,
    cancelled: Callable[[], bool],
) -> Path:
    """_fetch with one writer per partial file: an advisory lock beside it, so two pulls of one
    blob in one folder (a pull started again while its first run still writes) never append to
    it together; the second is refused with a sentence."""
    lock_path = partial.with_name(partial.name + ".lock")
    with open(lock_path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PullError(
                "busy", f"Another pull is writing {what} into this models folder now: wait for it to end.", status=409
            ) from None
        try:
            return _fetch(
                url,
                digest=digest,
                size=size,
                partial=partial,
                what=what,
                progress=progress,
                cancelled=cancelled,
            )
        finally:
            lock_path.unlink(missing_ok=True)
