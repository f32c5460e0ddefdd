"""Model names as Ollama spells them, parsed and checked before anything touches a disk.

- Ollama's library: `llama3.2`, `qwen3:4b`, `namespace/model:tag`, `host/namespace/model:tag`
  (the default namespace is `library`, the default tag `latest`).
- Hugging Face: `hf.co/{user}/{repo}` or `hf.co/{user}/{repo}:{quant}` (Ollama's spelling; the
  quantization picks the repository's GGUF file), or `hf.co/{user}/{repo}/{file}.gguf` (a file
  named outright). `huggingface.co/` is read as `hf.co/`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.pull.errors import PullError

HF_HOSTS = ("hf.co", "huggingface.co")
# The parts of a name, as Ollama's own name checks allow them: nothing that could climb out of
# a folder (no "..", no leading dot, no slashes or backslashes inside a part).
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?$")
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,250}\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class OllamaName:
    host: str  # "" for the configured registry
    namespace: str
    model: str
    tag: str

    @property
    def repository(self) -> str:
        return f"{self.namespace}/{self.model}"

    @property
    def short(self) -> str:
        """The name as Ollama lists it: `qwen3:4b`, `ns/model:tag`, `host/ns/model:tag`."""
        base = self.model if self.namespace == "library" else self.repository
        return f"{self.host}/{base}:{self.tag}" if self.host else f"{base}:{self.tag}"

    @property
    def file_name(self) -> str:
        """The GGUF's file name in the models folder (qwen3-4b.gguf, ns-model-tag.gguf)."""
        parts = ([self.host.replace(":", "-")] if self.host else []) + (
            [] if self.namespace == "library" else [self.namespace]
        )
        return "-".join([*parts, self.model, self.tag]) + ".gguf"


@dataclass(frozen=True)
class HfName:
    repo: str  # user/repo
    quant: str  # "" when a file is named, or none was asked for (the repository's pick)
    file: str  # "" unless named outright

    @property
    def short(self) -> str:
        if self.file:
            return f"hf.co/{self.repo}/{self.file}"
        return f"hf.co/{self.repo}:{self.quant}" if self.quant else f"hf.co/{self.repo}"


def _bad(name: str, why: str) -> PullError:
    return PullError("bad_name", f"{name[:200]!r} is not a model name: {why}", status=400)


def parse(name: str) -> OllamaName | HfName:
    """The name read, or PullError bad_name with a sentence saying what is wrong."""
    text = (name or "").strip()
    if not text:
        raise _bad(text, "give a name such as llama3.2, qwen3:4b or hf.co/user/repo:Q4_K_M.")
    if any(ch in text for ch in "\\\0") or ".." in text or text.startswith(("/", ".")) or "//" in text:
        raise _bad(text, "a name may not hold a path (no .., backslashes or leading slashes).")
    if any(ch.isspace() for ch in text):
        raise _bad(text, "a name has no spaces.")
    parts = text.split("/")
    if parts[0].lower() in HF_HOSTS:
        return _parse_hf(text, parts[1:])
    host = ""
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        host = parts.pop(0)
        if not _HOST.match(host):
            raise _bad(text, f"{host!r} is not a registry's host name.")
    if len(parts) > 2:
        raise _bad(text, "use model, model:tag or namespace/model:tag.")
    namespace, model = parts if len(parts) == 2 else ("library", parts[0])
    model, _, tag = model.partition(":")
    tag = tag or "latest"
    for part, what in ((namespace, "namespace"), (model, "model")):
        if not _PART.match(part):
            raise _bad(text, f"the {what} {part!r} may hold only letters, digits, '.', '_' and '-'.")
    if not _TAG.match(tag):
        raise _bad(text, f"the tag {tag!r} may hold only letters, digits, '.', '_' and '-'.")
    return OllamaName(host=host, namespace=namespace.lower(), model=model.lower(), tag=tag)


def _parse_hf(text: str, parts: list[str]) -> HfName:
    if len(parts) == 3:
        user, repo, file = parts
        if not _FILE.match(file):
            raise _bad(text, f"{file!r} is not a GGUF file's name (it ends in .gguf).")
    elif len(parts) == 2:
        user, repo, file = parts[0], parts[1], ""
    else:
        raise _bad(text, "use hf.co/user/repo, hf.co/user/repo:QUANT or hf.co/user/repo/file.gguf.")
    repo, _, quant = repo.partition(":")
    if file and quant:
        raise _bad(text, "name a file or a quantization, not both.")
    for part, what in ((user, "user"), (repo, "repository")):
        if not _PART.match(part):
            raise _bad(text, f"the {what} {part!r} may hold only letters, digits, '.', '_' and '-'.")
    if quant and not _TAG.match(quant):
        raise _bad(text, f"the quantization {quant!r} may hold only letters, digits, '.', '_' and '-'.")
    return HfName(repo=f"{user}/{repo}", quant=quant, file=file)
