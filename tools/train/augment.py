"""Per-utterance augmentation: drawing the parameters (recorded in the manifest) and applying them.

Chain (as a call is degraded in life):
  TTS wav --sox--> pitch shift (formants + f0 together, ~ vocal tract length) -> speed
  perturbation -> microphone EQ -> room reverb -> 16 kHz float          (stage 1, voice/room)
  -> pad silence -> additive noise at an SNR (white, pink, brown, babble of other utterances)
  -> mains hum -> level (with rare hard clipping)                         (numpy)
  -> telephone channel: band-limit, 8 kHz, G.711 mu-law / A-law, GSM 06.10, AMR-NB or Opus
     8-16 kbit/s, back to 16 kHz                                          (sox / opus-tools)
  -> 16-bit.
Everything is deterministic given the drawn parameters (sox runs with -R, no dither; the codecs
get 16-bit input quantised here).
"""
from __future__ import annotations

import random
import subprocess
import threading

import numpy as np

SR = 16000
CODECS = ["pcm8k", "ulaw", "alaw", "gsm", "amr_nb", "opus"]
NOISES = ["white", "pink", "brown", "babble", "babble"]


class AugmentError(RuntimeError):
    pass


# ---------------------------------------------------------------- drawing parameters

def _draw_channel(rng: random.Random, codec: str | None = None) -> dict:
    codec = codec or rng.choice(CODECS)
    ch = {"codec": codec, "low_hz": rng.randint(200, 400), "high_hz": rng.randint(3000, 3600)}
    if codec == "opus":
        ch["bitrate_kbps"] = rng.choice([8, 10, 12, 14, 16])
    elif codec == "amr_nb":
        ch["mode"] = rng.randint(0, 7)      # 4.75 .. 12.2 kbit/s
    return ch


def _draw_noise(rng: random.Random, snr_lo: float, snr_hi: float) -> dict:
    kind = rng.choice(NOISES)
    lo = max(snr_lo, 5.0) if kind == "babble" else snr_lo
    return {"type": kind, "snr_db": round(rng.uniform(lo, snr_hi), 1),
            "seed": rng.getrandbits(31), "babble_talkers": rng.randint(3, 7)}


def draw(rng: random.Random, condition: str) -> dict:
    """Augmentation parameters for one utterance.
    condition: 'train'/'mixed' (random everything), 'clean' (nothing), 'phone_noise'
    (telephone channel + noise, voice untouched)."""
    a: dict = {"pad_s": [round(rng.uniform(0.05, 0.5), 3), round(rng.uniform(0.05, 0.5), 3)]}
    if condition == "clean":
        return a
    if condition == "phone_noise":
        a["noise"] = _draw_noise(rng, 5.0, 20.0)
        a["level_dbfs"] = round(rng.uniform(-30, -18), 1)
        a["channel"] = _draw_channel(rng, rng.choice(CODECS[1:]))
        return a
    if rng.random() < 0.12:                          # some plain utterances stay in train
        a["level_dbfs"] = round(rng.uniform(-32, -14), 1)
        return a
    if rng.random() < 0.6:
        a["pitch_cents"] = int(rng.uniform(-350, 350))
    if rng.random() < 0.5:
        a["speed"] = round(rng.uniform(0.9, 1.1), 3)
    if rng.random() < 0.15:
        a["eq"] = [[rng.randint(150, 4000), round(rng.uniform(0.5, 2.0), 2),
                    round(rng.uniform(-8, 8), 1)] for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.3:
        a["reverb"] = {"reverberance": rng.randint(10, 80), "hf_damping": rng.randint(20, 90),
                       "room_scale": rng.randint(20, 100), "pre_delay_ms": rng.randint(0, 30),
                       "wet_gain_db": round(rng.uniform(-6, 0), 1)}
    if rng.random() < 0.65:
        a["noise"] = _draw_noise(rng, 0.0, 30.0)
    if rng.random() < 0.1:
        a["hum"] = {"freq_hz": rng.choice([50, 60]), "snr_db": round(rng.uniform(15, 40), 1),
                    "seed": rng.getrandbits(31)}
    a["level_dbfs"] = round(rng.uniform(-35, -14), 1)
    if rng.random() < 0.04:
        a["clip_db"] = round(rng.uniform(1, 6), 1)   # drive this far past full scale
    if rng.random() < 0.5:
        a["channel"] = _draw_channel(rng)
    return a


# ---------------------------------------------------------------- stage 1: sox voice / room

def _run_pipe(cmds: list[list[str]], data: bytes) -> bytes:
    """Run a pipeline of commands with data on the first one's stdin; returns the last stdout."""
    procs: list[subprocess.Popen] = []
    try:
        prev_out = None
        for i, cmd in enumerate(cmds):
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE if i == 0 else prev_out,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if prev_out is not None:
                prev_out.close()          # the next process owns it now
            prev_out = p.stdout
            procs.append(p)

        def writer():
            try:
                procs[0].stdin.write(data)
            except BrokenPipeError:
                pass
            finally:
                procs[0].stdin.close()
        t = threading.Thread(target=writer)
        t.start()
        out = procs[-1].stdout.read()
        procs[-1].stdout.close()
        t.join()
        for p in procs:
            p.wait(timeout=120)
        if any(p.returncode != 0 for p in procs):
            raise AugmentError(f"pipeline failed: {[c[0] for c in cmds]}")
        return out
    except OSError as e:
        raise AugmentError(f"pipeline failed: {e}") from e
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def voice_room(tts_wav: str, a: dict) -> np.ndarray:
    """TTS output file -> float32 16 kHz mono with pitch/speed/EQ/reverb applied."""
    effects: list[str] = []
    if a.get("pitch_cents"):
        effects += ["pitch", str(a["pitch_cents"])]
    if a.get("speed"):
        effects += ["speed", str(a["speed"])]
    for f, q, g in a.get("eq", []):
        effects += ["equalizer", str(f), f"{q}q", str(g)]
    if "reverb" in a:
        r = a["reverb"]
        effects += ["reverb", str(r["reverberance"]), str(r["hf_damping"]), str(r["room_scale"]),
                    "0", str(r["pre_delay_ms"]), str(r["wet_gain_db"])]
    effects += ["rate", "-h", str(SR)]
    cmd = ["sox", "-R", "-V1", tts_wav, "-t", "f32", "-c", "1", "-"] + effects
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=120, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise AugmentError(f"sox failed on {tts_wav}: {e}") from e
    return np.frombuffer(out, dtype="<f4").astype(np.float32)


# ---------------------------------------------------------------- stage 2: noise, level

def _active_power(x: np.ndarray) -> float:
    """Mean power over frames within 35 dB of the loudest (speech, not the silence around it)."""
    n = len(x) // 400
    if n == 0:
        return float(np.mean(x ** 2) + 1e-12)
    p = np.mean(x[: n * 400].reshape(n, 400) ** 2, axis=1)
    act = p[p > p.max() * 10 ** (-3.5)]
    return float(act.mean() + 1e-12)


def colored_noise(n: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """White, pink (1/f power) or brown (1/f^2 power, flat below 20 Hz), unit variance."""
    if kind == "white":
        return rng.standard_normal(n)
    m = 1 << max(1, (n - 1).bit_length())        # FFT of a power of two, then cut
    spec = np.fft.rfft(rng.standard_normal(m))
    f = np.maximum(np.fft.rfftfreq(m, 1.0 / SR), 20.0)
    spec /= f ** (0.5 if kind == "pink" else 1.0)
    out = np.fft.irfft(spec, m)[:n]
    return out / (np.std(out) + 1e-12)


def babble(n: int, others: list[np.ndarray], talkers: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(n)
    if not others:
        return colored_noise(n, "pink", rng)
    picks = rng.choice(len(others), size=min(talkers, max(1, len(others))), replace=len(others) < talkers)
    for i in picks:
        src = others[int(i)]
        src = src / (np.sqrt(_active_power(src)) + 1e-9)
        reps = int(np.ceil(n / max(1, len(src)))) + 1
        tiled = np.tile(src, reps)
        off = int(rng.integers(0, len(src)))
        out += tiled[off: off + n]
    return out / (np.std(out) + 1e-12)


def hum(n: int, freq: float, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n) / SR
    out = np.zeros(n)
    for h in range(1, 8):
        out += (0.6 ** (h - 1)) * rng.uniform(0.5, 1.0) * np.sin(2 * np.pi * freq * h * t
                                                                  + rng.uniform(0, 2 * np.pi))
    return out / (np.std(out) + 1e-12)


def noise_and_level(x: np.ndarray, a: dict, others: list[np.ndarray]) -> np.ndarray:
    pad = a.get("pad_s", [0.0, 0.0])
    x = np.concatenate([np.zeros(int(pad[0] * SR)), x.astype(np.float64), np.zeros(int(pad[1] * SR))])
    ps = _active_power(x)
    if "noise" in a:
        nz = a["noise"]
        g = np.random.default_rng(nz["seed"])
        if nz["type"] == "babble":
            noise = babble(len(x), others, nz["babble_talkers"], g)
        else:
            noise = colored_noise(len(x), nz["type"], g)
        x = x + noise * np.sqrt(ps / 10 ** (nz["snr_db"] / 10))
    if "hum" in a:
        h = a["hum"]
        x = x + hum(len(x), h["freq_hz"], np.random.default_rng(h["seed"])) * \
            np.sqrt(ps / 10 ** (h["snr_db"] / 10))
    if "level_dbfs" in a:
        rms = np.sqrt(_active_power(x))
        x = x * (10 ** (a["level_dbfs"] / 20) / (rms + 1e-12))
    if "clip_db" in a:
        x = np.clip(x * 10 ** (a["clip_db"] / 20) / (np.abs(x).max() + 1e-12), -1.0, 1.0)
    peak = np.abs(x).max()
    if peak > 0.99:
        x = x * (0.99 / peak)
    return x.astype(np.float32)


# ---------------------------------------------------------------- stage 3: telephone channel

def to_int16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 32767.0), -32768, 32767).astype(np.int16)


def channel(x: np.ndarray, ch: dict) -> np.ndarray:
    """float32 16 kHz -> through the telephone channel -> float32 16 kHz."""
    pcm = to_int16(x).astype("<i2").tobytes()
    src = ["sox", "-R", "-V1", "-D", "-t", "s16", "-r", str(SR), "-c", "1", "-"]
    band = ["sinc", f"{ch['low_hz']}-{ch['high_hz']}", "rate", "-h", "8000"]
    back = ["-t", "f32", "-r", str(SR), "-c", "1", "-", "rate", "-h", str(SR)]
    codec = ch["codec"]
    if codec == "pcm8k":
        cmds = [src + ["-t", "f32", "-r", "8000", "-"] + band,
                ["sox", "-R", "-V1", "-t", "f32", "-r", "8000", "-c", "1", "-"] + back]
    elif codec in ("ulaw", "alaw", "gsm"):
        enc = {"ulaw": ["-t", "ul"], "alaw": ["-t", "al"], "gsm": ["-t", "gsm"]}[codec]
        cmds = [src + ["-r", "8000"] + enc + ["-"] + band,
                ["sox", "-R", "-V1"] + enc + ["-r", "8000", "-c", "1", "-"] + back]
    elif codec == "amr_nb":
        cmds = [src + ["-r", "8000", "-t", "amr-nb", "-C", str(ch["mode"]), "-"] + band,
                ["sox", "-R", "-V1", "-t", "amr-nb", "-"] + back]
    elif codec == "opus":
        cmds = [src + ["-r", "8000", "-t", "s16", "-"] + band,
                ["opusenc", "--quiet", "--serial", "1", "--raw", "--raw-rate", "8000",
                 "--raw-chan", "1", "--bitrate", str(ch["bitrate_kbps"]), "--speech", "-", "-"],
                ["opusdec", "--quiet", "--rate", str(SR), "--float", "-", "-"]]
    else:
        raise AugmentError("unknown codec " + codec)
    y = np.frombuffer(_run_pipe(cmds, pcm), dtype="<f4").astype(np.float32)
    if len(y) == 0:
        raise AugmentError("channel produced no audio: " + codec)
    # Keep the original length (codecs add a little delay / padding).
    if len(y) >= len(x):
        return y[: len(x)]
    return np.concatenate([y, np.zeros(len(x) - len(y), dtype=np.float32)])


def apply(tts_stage1: np.ndarray, a: dict, others: list[np.ndarray]) -> np.ndarray:
    """Stage 2 and 3 on a stage-1 signal; returns int16 16 kHz."""
    x = noise_and_level(tts_stage1, a, others)
    if "channel" in a:
        x = channel(x, a["channel"])
        peak = np.abs(x).max()
        if peak > 0.999:
            x = x * (0.999 / peak)
    return to_int16(x)
