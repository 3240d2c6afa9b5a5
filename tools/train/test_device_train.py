"""Tests of the data path to the lent GPU machine (opus_pack.py, device_data.py, device_train.sh)
and of link_splits.py (splits of several data directories in one):

- Opus packs give back as many samples as went in, aligned to the sample (cross-correlation peak
  at lag 0), and as close to the original in the model's features as opus-tools' own round trip
  at the same bitrate; on the bundled call's real speech;
- the augmentation is reproducible from its seed, changes the length by its speed factor, and its
  telephone channel leaves almost no energy above 4 kHz;
- a pack stays within its byte budget and says what it left out;
- device_train.sh --smoke runs the whole command on the CPU (pack -> decode, augment, fbank ->
  train.py two steps -> export) and brings back a model directory train.py loads.

Needs python3-torch, torchaudio, soundfile, libopus and opus-tools; exits 77 without them (ctest: skipped).

  /usr/bin/python3 tools/train/test_device_train.py
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import soundfile as sf
    import torch  # noqa: F401
    import torchaudio  # noqa: F401
    import opus_pack
    opus_pack.lib()
    import shutil
    if not shutil.which("opusenc") or not shutil.which("opusdec"):
        raise ImportError("opus-tools (the reference encoder/decoder)")
except (ImportError, RuntimeError) as e:
    print(f"SKIPPED: {e}", file=sys.stderr)
    sys.exit(77)
import augment  # noqa: E402
import device_data  # noqa: E402

CALL = os.path.join(ROOT, "tests", "data", "sample_call_8k_mulaw_stereo.wav")


def call_speech(seconds: float, start: float = 0.0, channel: int = 0) -> np.ndarray:
    """int16 16 kHz real speech: the bundled call's channel, resampled."""
    x, sr = sf.read(CALL, dtype="float32", always_2d=True)
    x = x[int(start * sr):int((start + seconds) * sr), channel]
    y = device_data.resample(x, sr, 16000)
    return augment.to_int16(y)


class OpusPackTest(unittest.TestCase):
    def test_round_trip_aligned_and_close(self):
        x = call_speech(12.0)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.pack")
            opus_pack.write(path, [{"id": "a", "text": "x"}, {"id": "b"}],
                            lambda u: x if u["id"] == "a" else x[:7777], bitrate=12000)
            header, it = opus_pack.read(path)
            got = list(it)
        self.assertEqual([u["id"] for u, _ in got], ["a", "b"])
        self.assertEqual(got[0][0]["text"], "x")
        y, y2 = got[0][1], got[1][1]
        self.assertEqual(len(y), len(x))
        self.assertEqual(len(y2), 7777)
        xf, yf = x.astype(np.float64), y.astype(np.float64)
        lags = range(-200, 201)
        seg = slice(16000, 16000 * 10)
        corr = [float(np.dot(xf[seg], np.roll(yf, -k)[seg])) for k in lags]
        self.assertEqual(list(lags)[int(np.argmax(corr))], 0)
        # Against the same codec at the same bitrate through opus-tools (opusenc/opusdec, which
        # resample through 48 kHz on their own): in the model's features the pack must be as
        # close to the original as they are, 15% allowed for their resampling. Over every mel bin
        # and over the bins below 3.4 kHz (the call is 8 kHz audio: nothing above 4 kHz).
        with tempfile.TemporaryDirectory() as d:
            sf.write(os.path.join(d, "a.wav"), x, 16000, subtype="PCM_16")
            subprocess.run(["opusenc", "--quiet", "--bitrate", "12", "--framesize", "20",
                            os.path.join(d, "a.wav"), os.path.join(d, "a.opus")], check=True)
            subprocess.run(["opusdec", "--quiet", "--rate", "16000", os.path.join(d, "a.opus"),
                            os.path.join(d, "b.wav")], check=True)
            z, _ = sf.read(os.path.join(d, "b.wav"), dtype="int16")
        self.assertEqual(len(z), len(x))
        fx, fy, fz = (device_data.fbank16k(a) for a in (x, y, z))
        speech = fx.max(1) > np.percentile(fx.max(1), 30)          # frames with speech energy
        for bins in (55, 80):
            ours = float(np.abs(fx - fy)[speech][:, :bins].mean())
            ref = float(np.abs(fx - fz)[speech][:, :bins].mean())
            self.assertLess(ours, 1.15 * ref, (bins, ours, ref))

    def test_not_a_pack_refused(self):
        with tempfile.NamedTemporaryFile(suffix=".pack") as f:
            f.write(b"RIFF....")
            f.flush()
            with self.assertRaises(ValueError):
                opus_pack.read(f.name)


class AugmentTest(unittest.TestCase):
    def test_augment_reproducible_speed_and_phone(self):
        x = call_speech(4.0, start=2.0).astype(np.float32) / 32768.0
        others = [call_speech(3.0, start=10.0, channel=1).astype(np.float32) / 32768.0]
        a1 = device_data.augment(x, random.Random(5), others)
        a2 = device_data.augment(x, random.Random(5), others)
        self.assertTrue(np.array_equal(a1[0], a2[0]))
        self.assertEqual(a1[1], a2[1])
        phones = 0
        for seed in range(12):
            y, a = device_data.augment(x, random.Random(seed), others)
            self.assertTrue(np.isfinite(y).all())
            self.assertLessEqual(float(np.abs(y).max()), 1.0)
            # Read as recorded at 16 kHz x speed: the length shrinks by that factor.
            self.assertLessEqual(abs(len(y) - len(x) / a["speed"]), 2, a)
            if "phone" in a:
                phones += 1
                spec = np.abs(np.fft.rfft(y)) ** 2
                f = np.fft.rfftfreq(len(y), 1 / 16000)
                self.assertLess(float(spec[f > 4100].sum() / spec.sum()), 0.01, a)
        self.assertGreater(phones, 0)


def write_fake_data(root: str) -> None:
    """A data directory as the recipe leaves it: train_real shards whose utterances name their
    source recordings (tts.path), a TTS split (train: a voice, rendered audio under audio/, no
    source recording) of 6 utterances of 2 s, a dev split with its audio under audio/."""
    os.makedirs(os.path.join(root, "src"))
    for split, n in (("train_real", 12), ("train", 6), ("dev", 4)):
        utts = []
        for i in range(n):
            x = call_speech(2.0 if split == "train" else 1.5 + 0.25 * i, start=1.0 + 2 * i, channel=i % 2)
            if split in ("dev", "train"):
                rel = os.path.join("audio", split, f"d{i}.wav")
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                sf.write(os.path.join(root, rel), x, 16000, subtype="PCM_16")
                utts.append({"id": f"{split}-{i}", "text": "hello there", "path": rel, "duration": len(x) / 16000})
                if split == "train":
                    utts[-1].update(voice="flite:slt", tts={"tempo": 1.0, "pitch_cents": 0})
            else:
                src = os.path.join(root, "src", f"s{i}.wav")
                # 8 kHz sources, as the asterisk prompts are: the pack resamples them.
                sf.write(src, device_data.resample(x.astype(np.float32) / 32768, 16000, 8000), 8000,
                         subtype="PCM_16")
                for copy in range(2):   # the recipe's copies name the same source
                    utts.append({"id": f"{split}-{i}-{copy}", "text": "thank you for calling",
                                 "tts": {"path": src}, "duration": len(x) / 16000})
        os.makedirs(os.path.join(root, "shards", split))
        with open(os.path.join(root, "shards", split, f"{split}-00000.json"), "w") as f:
            json.dump({"utts": utts}, f)


class PackAndSmokeTest(unittest.TestCase):
    def test_budget_and_smoke_run(self):
        with tempfile.TemporaryDirectory(prefix="sluice-devtrain-") as d:
            data = os.path.join(d, "data")
            write_fake_data(data)
            small = os.path.join(d, "small")
            # 12 sources of 1.5-4.25 s: at 12 kbit/s ~1.6-6.7 kB each; dev ~12 kB and libopus
            # 0.4 MB: a 0.43 MiB budget fits only some of them.
            self.assertEqual(device_data.main(["pack", "--data", data, "--out", small,
                                               "--budget-mb", "0.43"]), 0)
            with open(os.path.join(small, "manifest.json")) as f:
                m = json.load(f)
            kept = m["splits"]["train_real"]["utts"]
            self.assertGreater(kept, 0)
            self.assertEqual(kept + m["skipped_for_budget"]["train_real"], 12)
            self.assertLessEqual(sum(m["bytes"].values()), 0.43 * 2**20)
            pack = os.path.join(d, "pack")
            self.assertEqual(device_data.main(["pack", "--data", data, "--out", pack, "--budget-mb", "4"]), 0)
            with open(os.path.join(pack, "manifest.json")) as f:
                m = json.load(f)
            self.assertEqual(m["splits"]["train_real"]["utts"], 12)   # each source once
            self.assertEqual(m["dev_utts"], 4)
            # The default carries at most 1.2 h of TTS: all six 2 s utterances here.
            self.assertEqual(m["splits"]["train"]["utts"], 6)
            capped = os.path.join(d, "capped")
            # train:0.0025 = 9 s: four of the six 2 s utterances, then the hours are spent.
            self.assertEqual(device_data.main(["pack", "--data", data, "--out", capped, "--budget-mb", "4",
                                               "--splits", "train:0.0025,train_real"]), 0)
            with open(os.path.join(capped, "manifest.json")) as f:
                c = json.load(f)
            self.assertEqual(c["splits"]["train"]["utts"], 4)
            self.assertEqual(c["left_out_by_hours"], {"train": 2})
            self.assertEqual(c["splits"]["train_real"]["utts"], 12)
            out = os.path.join(d, "out")
            env = dict(os.environ, DEVICE_TRAIN_PACK=pack, DEVICE_TRAIN_WORK=os.path.join(d, "work"),
                       OUT=out, PYTHON=sys.executable, DEVICE_TRAIN_SECONDS="600")
            p = subprocess.run(["bash", os.path.join(HERE, "device_train.sh"), "--smoke"], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=900)
            self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
            with open(os.path.join(out, "log.jsonl")) as f:
                steps = [json.loads(line) for line in f if '"loss"' in line]
            self.assertEqual([s["step"] for s in steps], [1, 2])
            self.assertTrue(all(np.isfinite(s["loss"]) for s in steps))
            with open(os.path.join(d, "work", "data", "shards", "train_real", "train_real-00000.json")) as f:
                made = json.load(f)["utts"]
            self.assertEqual(len(made), 24)   # 12 recordings x 2 copies (as recorded + augmented)
            self.assertEqual(sorted({u["condition"] for u in made}), ["clean", "train"])
            with open(os.path.join(d, "work", "data", "shards", "train", "train-00000.json")) as f:
                self.assertEqual(len(json.load(f)["utts"]), 12)   # the TTS split travelled too
            with open(os.path.join(out, "device_train.txt")) as f:
                line = [l for l in f if l.startswith("## train on ")][0]
            self.assertEqual(sorted(line.split()[3].split(",")), ["train", "train_real:2"])
            import train
            model = train.load_model_dir(os.path.join(out, "model"))
            self.assertGreater(sum(p.numel() for p in model.parameters()), 10**6)
            # At most 8 files come back from the device: what the script leaves in OUT.
            files = [os.path.join(r, f) for r, _, fs in os.walk(out) for f in fs]
            self.assertLessEqual(len(files), 8, files)


class LinkSplitsTest(unittest.TestCase):
    def test_linked_split_reads_the_same_features_under_its_new_name(self):
        import link_splits
        with tempfile.TemporaryDirectory(prefix="sluice-link-") as d:
            src = os.path.join(d, "src")
            os.makedirs(os.path.join(src, "feats", "train_real"))
            os.makedirs(os.path.join(src, "shards", "train_real"))
            x = np.arange(12 * 80, dtype=np.float16).reshape(12, 80)
            np.save(os.path.join(src, "feats", "train_real", "s0.npy"), x)
            utts = [{"id": "a", "text": "hello", "split": "train_real",
                     "feats": {"path": "feats/train_real/s0.npy", "offset": 0, "frames": 5}},
                    {"id": "b", "text": "there", "split": "train_real",
                     "feats": {"path": "feats/train_real/s0.npy", "offset": 5, "frames": 7}}]
            with open(os.path.join(src, "shards", "train_real", "s0.json"), "w") as f:
                json.dump({"shard": "s0", "utts": utts}, f)
            out = os.path.join(d, "out")
            self.assertEqual(link_splits.main(["--out", out, "--split", f"{src}:train_real:aug_real",
                                               "--split", f"{src}:train_real"]), 0)
            for name in ("aug_real", "train_real"):
                with open(os.path.join(out, "shards", name, "s0.json")) as f:
                    got = json.load(f)["utts"]
                self.assertEqual([u["split"] for u in got], [name, name])
                self.assertEqual([u["text"] for u in got], ["hello", "there"])
                u = got[1]
                y = np.load(os.path.join(out, u["feats"]["path"]))
                self.assertTrue(np.array_equal(y[u["feats"]["offset"]:u["feats"]["offset"] + u["feats"]["frames"]],
                                               x[5:12]))
            with self.assertRaises(FileExistsError):   # a name is linked once
                link_splits.main(["--out", out, "--split", f"{src}:train_real:aug_real"])
            with self.assertRaises(SystemExit):
                link_splits.main(["--out", out, "--split", f"{src}:nosuch"])


if __name__ == "__main__":
    unittest.main()
