"""Minimal safetensors writer/reader (the format: u64 little-endian header length, a JSON header
{name: {dtype, shape, data_offsets}}, then the raw little-endian tensor bytes). Debian 12 does not
package the safetensors module, and the format is small enough to write directly."""
from __future__ import annotations

import json
import struct

import numpy as np
import torch

# torch dtype -> (header code, numpy dtype the bytes are written through). numpy has no bfloat16:
# 16-bit floats are written and read as their raw int16 bit patterns (torch's .view()), so the
# file holds exactly the values torch's own .half() / .bfloat16() conversion produced.
_DTYPES = {torch.float32: ("F32", np.float32), torch.float16: ("F16", np.int16), torch.bfloat16: ("BF16", np.int16),
           torch.int32: ("I32", np.int32), torch.int64: ("I64", np.int64)}
_BACK = {"F32": (np.float32, None), "F16": (np.int16, torch.float16), "BF16": (np.int16, torch.bfloat16),
         "I32": (np.int32, None), "I64": (np.int64, None)}
_BITS_16 = (torch.float16, torch.bfloat16)
_ALIGN = 8


def save(tensors: dict[str, torch.Tensor], path: str, metadata: dict[str, str] | None = None) -> None:
    header: dict = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        code, np_dtype = _DTYPES[t.dtype]
        if t.dtype in _BITS_16:
            t = t.view(torch.int16)
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
        np_dtype, view = _BACK[info["dtype"]]
        t = torch.from_numpy(np.frombuffer(base[a:b], dtype=np_dtype).reshape(info["shape"]).copy())
        out[name] = t.view(view) if view is not None else t
    return out
