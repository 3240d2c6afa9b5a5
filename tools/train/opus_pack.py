"""Speech carried compactly: 16 kHz mono audio as Opus packets (libopus through ctypes, no other
package), many utterances in one file, for the lent GPU machine whose whole working tree must fit
in 64 MiB (tools/train/device_train.sh). 12 kbit/s speech is ~5.4 MB per hour.

File format (little-endian): b"SLOP1\\n", u32 header length, header JSON ({"rate": 16000,
"frame": 320, "bitrate": ..., "lookahead": samples, "utts": [{"id", "text", "samples",
"packets", ...}, ...]}), then per utterance its packets in order, each u16 length + bytes.
Decoding drops the encoder's lookahead and returns exactly `samples` samples, so the decoded
audio lines up with the original sample for sample (checked by test_device_train.py).

libopus is found by ctypes (Debian libopus0), or at $SLUICE_LIBOPUS (the copy device_train.sh
carries to a machine without Debian packages).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import struct

import numpy as np

MAGIC = b"SLOP1\n"
RATE = 16000
FRAME = 320                       # 20 ms
OPUS_APPLICATION_VOIP = 2048
OPUS_SET_BITRATE_REQUEST = 4002
OPUS_SET_COMPLEXITY_REQUEST = 4010
OPUS_GET_LOOKAHEAD_REQUEST = 4027
MAX_PACKET = 4000

_lib = None


def lib():
    global _lib
    if _lib is None:
        path = os.environ.get("SLUICE_LIBOPUS") or ctypes.util.find_library("opus") or "libopus.so.0"
        try:
            _lib = ctypes.CDLL(path)
        except OSError as e:
            raise RuntimeError(f"libopus not found ({path}): install libopus0 or set SLUICE_LIBOPUS") from e
        _lib.opus_encoder_create.restype = ctypes.c_void_p
        _lib.opus_encoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_int)]
        _lib.opus_encode.restype = ctypes.c_int32
        _lib.opus_encode.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int16), ctypes.c_int,
                                     ctypes.c_char_p, ctypes.c_int32]
        _lib.opus_encoder_destroy.argtypes = [ctypes.c_void_p]
        _lib.opus_decoder_create.restype = ctypes.c_void_p
        _lib.opus_decoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        _lib.opus_decode.restype = ctypes.c_int
        _lib.opus_decode.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                     ctypes.POINTER(ctypes.c_int16), ctypes.c_int, ctypes.c_int]
        _lib.opus_decoder_destroy.argtypes = [ctypes.c_void_p]
    return _lib


class Encoder:
    def __init__(self, bitrate: int):
        L = lib()
        err = ctypes.c_int(0)
        self.h = L.opus_encoder_create(RATE, 1, OPUS_APPLICATION_VOIP, ctypes.byref(err))
        if err.value != 0 or not self.h:
            raise RuntimeError(f"opus_encoder_create failed ({err.value})")
        # opus_encoder_ctl is variadic: one int argument for the setters, an int* for the getter.
        L.opus_encoder_ctl(ctypes.c_void_p(self.h), OPUS_SET_BITRATE_REQUEST, ctypes.c_int32(bitrate))
        L.opus_encoder_ctl(ctypes.c_void_p(self.h), OPUS_SET_COMPLEXITY_REQUEST, ctypes.c_int32(10))
        la = ctypes.c_int32(0)
        L.opus_encoder_ctl(ctypes.c_void_p(self.h), OPUS_GET_LOOKAHEAD_REQUEST, ctypes.byref(la))
        self.lookahead = la.value

    def encode(self, x: np.ndarray) -> list[bytes]:
        """int16 samples -> packets; the signal is padded with silence to cover the lookahead."""
        L = lib()
        n = len(x) + self.lookahead
        frames = -(-n // FRAME)
        pcm = np.zeros(frames * FRAME, np.int16)
        pcm[:len(x)] = x
        buf = ctypes.create_string_buffer(MAX_PACKET)
        out = []
        for i in range(frames):
            chunk = np.ascontiguousarray(pcm[i * FRAME:(i + 1) * FRAME])
            nb = L.opus_encode(ctypes.c_void_p(self.h), chunk.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)),
                               FRAME, buf, MAX_PACKET)
            if nb < 0:
                raise RuntimeError(f"opus_encode failed ({nb})")
            out.append(buf.raw[:nb])
        return out

    def close(self):
        if self.h:
            lib().opus_encoder_destroy(ctypes.c_void_p(self.h))
            self.h = None


def decode(packets: list[bytes], samples: int, lookahead: int) -> np.ndarray:
    """Packets of one utterance -> its int16 samples, aligned with what was encoded."""
    L = lib()
    err = ctypes.c_int(0)
    h = L.opus_decoder_create(RATE, 1, ctypes.byref(err))
    if err.value != 0 or not h:
        raise RuntimeError(f"opus_decoder_create failed ({err.value})")
    try:
        out = np.zeros(len(packets) * FRAME, np.int16)
        pcm = np.zeros(FRAME, np.int16)
        pos = 0
        for p in packets:
            n = L.opus_decode(ctypes.c_void_p(h), p, len(p), pcm.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)),
                              FRAME, 0)
            if n < 0:
                raise RuntimeError(f"opus_decode failed ({n})")
            out[pos:pos + n] = pcm[:n]
            pos += n
    finally:
        L.opus_decoder_destroy(ctypes.c_void_p(h))
    y = out[lookahead:lookahead + samples]
    if len(y) < samples:
        raise RuntimeError(f"opus: {len(y)} samples decoded, {samples} expected")
    return y


def write(path: str, utts: list[dict], audio, bitrate: int = 12000) -> dict:
    """utts: records (JSON-able, each with "id"); audio(u) -> int16 16 kHz samples of u.
    Writes the pack; returns its header."""
    enc = Encoder(bitrate)
    blobs, recs = [], []
    try:
        for u in utts:
            x = np.asarray(audio(u))
            if x.dtype != np.int16:
                raise ValueError(f"{u['id']}: int16 samples expected, got {x.dtype}")
            packets = enc.encode(x)
            blobs.append(b"".join(struct.pack("<H", len(p)) + p for p in packets))
            recs.append(dict(u, samples=int(len(x)), packets=len(packets)))
    finally:
        enc.close()
    header = {"rate": RATE, "frame": FRAME, "bitrate": bitrate, "lookahead": enc.lookahead, "utts": recs}
    hb = json.dumps(header).encode()
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
    return header


def read(path: str):
    """(header, iterator of (record, int16 samples)) of a pack written by write()."""
    f = open(path, "rb")
    if f.read(len(MAGIC)) != MAGIC:
        f.close()
        raise ValueError(f"{path}: not a sluice Opus pack")
    (hl,) = struct.unpack("<I", f.read(4))
    header = json.loads(f.read(hl))

    def it():
        with f:
            for u in header["utts"]:
                packets = []
                for _ in range(u["packets"]):
                    (n,) = struct.unpack("<H", f.read(2))
                    packets.append(f.read(n))
                yield u, decode(packets, u["samples"], header["lookahead"])
    return header, it()
