"""Minimal safetensors writer/reader (the format: u64 little-endian header length, a JSON header
{name: {dtype, shape, data_offsets}}, then the raw little-endian tensor bytes). Debian 12 does not
package the safetensors module, and the format is small enough to write directly."""
from __future__ import annotations

import json
import struct

import numpy as np
import torch

_DTYPES = {torch.float32: ("F32", np.float32), torch.int32: ("I32", np.int32), torch.int64: ("I64", np.int64)}
_BACK = {"F32": np.float32, "I32": np.int32, "I64": np.int64}
_ALIGN = 8


def save(tensors: dict[str, torch.Tensor], path: str, metadata: dict[str, str] | None = None) -> None:
    header: dict = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        code, np_dtype = _DTYPES[t.dtype]
        data = t.numpy().astype(np_dtype, copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((-len(raw)) % _ALIGN)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def load(path: str) -> dict[str, torch.Tensor]:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(base[a:b], dtype=_BACK[info["dtype"]]).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out
