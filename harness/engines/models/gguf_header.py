"""A fast reader for the part of a GGUF file the arithmetic needs: the metadata scalars and the
tensor table. The ``gguf`` package decodes every element of every array (a 262,144-entry
vocabulary takes about 20 s on a slow core); this skips arrays by length and reads nothing else.
Tensor sizes use the ``gguf`` package's own table of block sizes, so they are exact."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

MAGIC = b"GGUF"
# Metadata value types by their GGUF id: the struct format of each scalar, and the string and array ids.
SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
STRING, ARRAY = 8, 9


@dataclass
class Tensor:
    name: str
    n_bytes: int


@dataclass
class Header:
    fields: dict  # key -> scalar or string (arrays are left out)
    tensors: list[Tensor]


class _Reader:
    def __init__(self, fh):
        self.fh = fh

    def unpack(self, fmt: str):
        size = struct.calcsize(fmt)
        data = self.fh.read(size)
        if len(data) != size:
            raise ValueError("file ends inside the header")
        return struct.unpack(fmt, data)[0]

    def string(self) -> str:
        n = self.unpack("<Q")
        return self.fh.read(n).decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        self.fh.seek(self.unpack("<Q"), 1)

    def value(self, vtype: int):
        if vtype in SCALARS:
            return self.unpack(SCALARS[vtype])
        if vtype == STRING:
            return self.string()
        if vtype == ARRAY:
            etype, count = self.unpack("<I"), self.unpack("<Q")
            if etype in SCALARS:
                self.fh.seek(struct.calcsize(SCALARS[etype]) * count, 1)
            elif etype == STRING:
                for _ in range(count):
                    self.skip_string()
            else:
                for _ in range(count):
                    self.value(etype)
            return None
        raise ValueError(f"unknown metadata value type {vtype}")


def read_header(path) -> Header:
    with open(path, "rb") as fh:
        r = _Reader(fh)
        if fh.read(4) != MAGIC:
            raise ValueError("not a GGUF file (bad magic)")
        version = r.unpack("<I")
        if version < 2:
            raise ValueError(f"GGUF version {version} is too old")
        n_tensors, n_kv = r.unpack("<Q"), r.unpack("<Q")
        fields = {}
        for _ in range(n_kv):
            key = r.string()
            value = r.value(r.unpack("<I"))
            if value is not None:
                fields[key] = value
        tensors = []
        for _ in range(n_tensors):
            name = r.string()
            dims = [r.unpack("<Q") for _ in range(r.unpack("<I"))]
            ttype = r.unpack("<I")
            r.unpack("<Q")  # offset
            elements = 1
            for d in dims:
                elements *= d
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ttype)]
            tensors.append(Tensor(name, elements * type_size // block))
    return Header(fields, tensors)
