"""A fast reader for a GGUF file's header: its metadata and its tensors' shapes.

gguf's own GGUFReader decodes every element of every array into numpy views; a model's
vocabulary is an array of some 100,000–260,000 strings, so describing the bundled 253 MB model
took it 9 s on a 2-core box, and the model library describes every file in the folder. The
library needs a few scalars and the tensor shapes, so this walks the header with struct and
steps over arrays without decoding them: 25 ms for the same file. Value types and file types
still come from the gguf package. Format: ggml's docs/gguf.md (versions 2 and 3).
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

from gguf import GGUFValueType

MAGIC = b"GGUF"
_SCALARS = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}


class GGUFError(ValueError):
    """The file is not a GGUF model this reader understands; the message says why."""


@dataclass(frozen=True)
class SkippedArray:
    """An array value that was stepped over: its element type and length."""

    item_type: GGUFValueType
    count: int


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    type: int

    @property
    def n_elements(self) -> int:
        return math.prod(self.shape)


@dataclass
class Header:
    version: int
    metadata: dict[str, object] = field(default_factory=dict)
    tensors: list[TensorInfo] = field(default_factory=list)


class _Cursor:
    def __init__(self, buf, endian: str):
        self.buf, self.pos, self.endian = buf, 0, endian

    def unpack(self, fmt: str):
        values = struct.unpack_from(self.endian + fmt, self.buf, self.pos)
        self.pos += struct.calcsize(self.endian + fmt)
        return values

    def u32(self) -> int:
        return self.unpack("I")[0]

    def u64(self) -> int:
        return self.unpack("Q")[0]

    def string(self) -> str:
        n = self.u64()
        if self.pos + n > len(self.buf):
            raise GGUFError("The file ends in the middle of its header: it is truncated.")
        raw = self.buf[self.pos : self.pos + n]
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        n = self.u64()  # read first: `self.pos += self.u64()` would add to the old position
        self.pos += n

    def value(self, vtype: int, *, keep: bool = True):
        vtype = _value_type(vtype)
        if vtype == GGUFValueType.STRING:
            return self.string() if keep else self.skip_string()
        if vtype == GGUFValueType.ARRAY:
            item_type, count = _value_type(self.u32()), self.u64()
            fmt = _SCALARS.get(item_type)
            if fmt is not None:  # fixed-size items: one jump
                self.pos += count * struct.calcsize(fmt)
            elif item_type == GGUFValueType.STRING:  # a vocabulary: the hot loop, kept tight
                length, pos = struct.Struct(self.endian + "Q").unpack_from, self.pos
                for _ in range(count):
                    pos += 8 + length(self.buf, pos)[0]
                self.pos = pos
            else:  # nested arrays: each carries its own type and length
                for _ in range(count):
                    self.value(item_type, keep=False)
            if self.pos > len(self.buf):
                raise GGUFError("The file ends in the middle of its header: it is truncated.")
            return SkippedArray(item_type, count)
        return self.unpack(_SCALARS[vtype])[0]


def _value_type(code: int) -> GGUFValueType:
    try:
        return GGUFValueType(code)
    except ValueError:
        raise GGUFError(f"The header holds a value of unknown type {code}: the file is damaged.") from None


def read_header(path: str | Path) -> Header:
    """Metadata (arrays as SkippedArray) and tensor shapes; GGUFError for anything else."""
    with open(path, "rb") as f:
        if f.read(4) != MAGIC:
            raise GGUFError("This is not a GGUF file (its first bytes are not the GGUF signature).")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                return _parse(buf)
            except (struct.error, IndexError):
                raise GGUFError("The file ends in the middle of its header: it is truncated.") from None


def _parse(buf) -> Header:
    (version,) = struct.unpack_from("<I", buf, 4)
    endian = "<"
    if version & 0xFFFF == 0:  # written on a big-endian machine
        (version,), endian = struct.unpack_from(">I", buf, 4), ">"
    if version not in (2, 3):
        raise GGUFError(f"GGUF version {version} is not supported (versions 2 and 3 are).")
    cur = _Cursor(buf, endian)
    cur.pos = 8
    n_tensors, n_kv = cur.u64(), cur.u64()
    header = Header(version=version)
    for _ in range(n_kv):
        key = cur.string()
        header.metadata[key] = cur.value(cur.u32())
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.u32()
        shape = cur.unpack(f"{n_dims}Q")
        ttype = cur.u32()
        cur.u64()  # the tensor's data offset: not needed to describe it
        header.tensors.append(TensorInfo(name=name, shape=tuple(shape), type=ttype))
    return header
