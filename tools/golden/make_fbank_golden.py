#!/usr/bin/python3
"""Writes the golden data for tests/dsp/fbank_test.cpp: small 16 kHz inputs and the features
torchaudio.compliance.kaldi.fbank computes for them, with the options the engine's dsp::fbank_computer
reproduces (the model contract in DESIGN.md).

Run with Debian's Python (python3-torch, python3-torchaudio), from anywhere:
    /usr/bin/python3 tools/golden/make_fbank_golden.py [--out tests/data/fbank]

Outputs, per case NAME:
    NAME.wav                      16-bit PCM mono 16 kHz; the test reads it as int16 / 32768
    NAME.fbank.f32                the reference: kaldi.fbank run on a float64 waveform
    NAME.fbank_torch_float32.f32  kaldi.fbank run on a float32 waveform, as a training
                                  recipe usually does
both raw little-endian float32 [n_frames, num_mel_bins], and manifest.json describing the cases.

Why two: torchaudio's float32 path has rounding error of its own, large in bins far below a
frame's loudest (0.5 in the log on the chirp, 1.6e-3 on speech, against its own float64
result). The engine computes in double, so it is held to the float64 result at 1e-3, and to
the float32 result only up to the float32 result's own distance from the float64 one.
Needs espeak-ng and sox for the speech case. The inputs are fixed by seeds, so re-running only
changes files if a tool's version changes the audio (sox runs with -D: no random dither).
"""

import argparse
import json
import math
import pathlib
import subprocess
import tempfile
import wave

import numpy as np
import torch
import torchaudio
import torchaudio.compliance.kaldi as kaldi

SAMPLE_RATE = 16000
PCM16_SCALE = 32768.0
# The feature options: fbank_config defaults, no dither, no energy floor.
FBANK_OPTIONS = dict(
    num_mel_bins=80,
    frame_length=25.0,
    frame_shift=10.0,
    low_freq=20.0,
    high_freq=0.0,
    preemphasis_coefficient=0.97,
    dither=0.0,
    energy_floor=0.0,
    sample_frequency=float(SAMPLE_RATE),
)

SPEECH_TEXT = "Thank you for calling, please hold."
SPEECH_SECONDS = 1.5
CHIRP_SECONDS = 0.5
CHIRP_START_HZ = 100.0
CHIRP_END_HZ = 7500.0
CHIRP_AMPLITUDE = 0.5
NOISE_SECONDS = 0.3
NOISE_AMPLITUDE = 0.01  # about -40 dBFS: a quiet line
NOISE_SEED = 20240611
# One sample short of the second frame: checks the snip_edges frame count at a boundary.
SHORT_SAMPLES = 400 + 160 - 1


def to_int16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)


def speech() -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        raw = pathlib.Path(tmp) / "espeak.wav"
        resampled = pathlib.Path(tmp) / "speech16k.raw"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(raw), SPEECH_TEXT],
                       check=True)
        subprocess.run(["sox", "-D", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16",
                        "-e", "signed-integer", "-t", "raw", str(resampled),
                        "trim", "0", str(SPEECH_SECONDS)], check=True)
        return np.frombuffer(resampled.read_bytes(), dtype="<i2").astype(np.int16)


def chirp() -> np.ndarray:
    n = int(CHIRP_SECONDS * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    rate = (CHIRP_END_HZ - CHIRP_START_HZ) / CHIRP_SECONDS
    phase = 2.0 * math.pi * (CHIRP_START_HZ * t + 0.5 * rate * t * t)
    return to_int16(CHIRP_AMPLITUDE * np.sin(phase))


def noise() -> np.ndarray:
    rng = np.random.default_rng(NOISE_SEED)
    n = int(NOISE_SECONDS * SAMPLE_RATE)
    return to_int16(NOISE_AMPLITUDE * rng.uniform(-1.0, 1.0, n))


def short() -> np.ndarray:
    rng = np.random.default_rng(NOISE_SEED + 1)
    return to_int16(0.1 * rng.standard_normal(SHORT_SAMPLES))


def write_wav(path: pathlib.Path, pcm: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm.astype("<i2").tobytes())


def features(pcm: np.ndarray, dtype: np.dtype) -> np.ndarray:
    # The engine's contract: floats in [-1, 1], scaled by 32768 before Kaldi's fbank.
    # (int16 / 32768 * 32768 is exact in either precision.)
    waveform = torch.from_numpy(pcm.astype(dtype) / PCM16_SCALE).unsqueeze(0)
    feats = kaldi.fbank(waveform * PCM16_SCALE, **FBANK_OPTIONS)
    return feats.numpy().astype("<f4")


def main() -> None:
    repo = pathlib.Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=repo / "tests" / "data" / "fbank")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    cases = []
    for name, make in (("speech", speech), ("chirp", chirp), ("noise", noise), ("short", short)):
        pcm = make()
        feats = features(pcm, np.float64)
        feats32 = features(pcm, np.float32)
        write_wav(args.out / f"{name}.wav", pcm)
        (args.out / f"{name}.fbank.f32").write_bytes(feats.tobytes())
        (args.out / f"{name}.fbank_torch_float32.f32").write_bytes(feats32.tobytes())
        gap = float(np.abs(feats - feats32).max()) if feats.size else 0.0
        cases.append(dict(name=name, wav=f"{name}.wav", fbank=f"{name}.fbank.f32",
                          fbank_torch_float32=f"{name}.fbank_torch_float32.f32",
                          num_samples=int(pcm.size), num_frames=int(feats.shape[0]),
                          num_mel_bins=int(feats.shape[1]), float32_vs_float64_max_abs=gap))
        print(f"{name}: {pcm.size} samples -> {feats.shape[0]} frames; torch float32 vs float64 {gap:.3g}")

    manifest = dict(
        generator="tools/golden/make_fbank_golden.py",
        reference="torchaudio.compliance.kaldi.fbank(int16 / 32768 * 32768, **options), "
                  "waveform in float64 (fbank) and float32 (fbank_torch_float32)",
        torch=torch.__version__,
        torchaudio=torchaudio.__version__,
        sample_rate=SAMPLE_RATE,
        options=FBANK_OPTIONS,
        cases=cases,
    )
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
