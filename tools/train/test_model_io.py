"""Tests of the recipe's model loading for fine-tuning (train.load_model_dir) and of the
routed-expert computation (model.MoE). Needs Debian's python3-torch; without it the script exits
77, which ctest reports as skipped (not passed).

  /usr/bin/python3 tools/train/test_model_io.py
"""
from __future__ import annotations

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
DEFAULT_MODEL = os.path.join(ROOT, "models", "default")
SKIP = 77


class LoadModelDirTest(unittest.TestCase):
    def test_default_model_reproduces_its_golden_logits(self):
        # The golden vectors were written by export.py from the checkpoint itself: a loader that
        # dropped, transposed or misnamed any tensor (CMVN and balancing biases included) would
        # not reproduce them.
        import torch
        import safetensors_io
        from train import load_model_dir
        model = load_model_dir(DEFAULT_MODEL).eval()
        gdir = os.path.join(DEFAULT_MODEL, "golden")
        names = sorted(os.listdir(gdir))
        self.assertTrue(names)
        for name in names:
            g = safetensors_io.load(os.path.join(gdir, name))
            fb = g["fbank"]
            with torch.no_grad():
                logits, _ = model(fb[None], torch.tensor([fb.shape[0]]))
                full, _ = model(fb[None], torch.tensor([fb.shape[0]]), chunk=0, left_chunks=-1)
            self.assertLess(float((logits[0] - g["logits"]).abs().max()), 1e-3, name)
            self.assertLess(float((full[0] - g["logits_full"]).abs().max()), 1e-3, name)

    def test_refuses_other_tokens(self):
        from train import load_model_dir
        with open(os.path.join(DEFAULT_MODEL, "tokens.txt")) as f:
            tokens = [line.rstrip("\n") for line in f if line.strip()]
        self.assertIsNotNone(load_model_dir(DEFAULT_MODEL, tokens))
        with self.assertRaises(ValueError):
            load_model_dir(DEFAULT_MODEL, tokens[:-1] + ["#"])

    def test_refuses_missing_tensor(self):
        import json
        import shutil
        import safetensors_io
        from train import load_model_dir
        with tempfile.TemporaryDirectory() as d:
            for f in ("model.json", "tokens.txt"):
                shutil.copy(os.path.join(DEFAULT_MODEL, f), d)
            t = safetensors_io.load(os.path.join(DEFAULT_MODEL, "weights.safetensors"))
            t.pop(sorted(t)[0])
            safetensors_io.save(t, os.path.join(d, "weights.safetensors"))
            with open(os.path.join(d, "model.json")) as f:
                self.assertIn("architecture", json.load(f))
            with self.assertRaises(RuntimeError):
                load_model_dir(d)


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: python3-torch is not installed (tools/setup.sh --train)")
        sys.exit(SKIP)
    unittest.main()
