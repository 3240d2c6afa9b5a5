"""F16 and BF16 weights, written by the recipe with torch's own conversion, read by the engine.

  /usr/bin/python3 tools/train/test_half_weights.py build/release/tests/sluice_moe_dtype_parity_tests

The recipe's writer (safetensors_io) stores torch.float16 / torch.bfloat16 tensors as F16 / BF16,
and export.py --dtype stores a model that way. The C++ half of the test is the binary named on the
command line (tests/moe/dtype_parity): it reads what torch wrote here, in a temp dir, and compares
with torch's own widening, golden vectors and the F32 model. Needs Debian's python3-torch; without
it the script exits 77, which ctest reports as skipped (not passed).
"""
from __future__ import annotations

import filecmp
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
DEFAULT_MODEL = os.path.join(ROOT, "models", "default")
TINY_MODEL = os.path.join(ROOT, "tests", "data", "tiny_model")
EXPORT = os.path.join(HERE, "export.py")
SKIP = 77
BINARY = ""  # the C++ test binary, from the command line


def header_of(path: str) -> dict:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def export(src: str, out: str, dtype: str) -> None:
    subprocess.run([sys.executable, EXPORT, "--model-dir", src, "--dtype", dtype, "--out", out], check=True,
                   stdout=subprocess.DEVNULL)


def special_values():
    import torch
    # Exact, rounding, overflowing, subnormal (in F16 and in F32) and non-finite values.
    v = [1.0, -2.0, 65504.0, 65519.0, 65520.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14, 1 / 3, -0.0, 0.0,
         1e-40, 3.4e38, -3.4e38, math.inf, -math.inf, math.nan, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
         1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8]
    return torch.tensor(v, dtype=torch.float32)


class WriterTest(unittest.TestCase):
    def test_each_dtype_round_trips_bit_for_bit_with_its_header_dtype(self):
        import torch
        import safetensors_io
        g = torch.Generator().manual_seed(3)
        base = torch.cat([special_values(), torch.randn(200, generator=g) * 10.0 ** torch.randint(-4, 4, (200,),
                                                                                                  generator=g)])
        with tempfile.TemporaryDirectory() as d:
            for dtype, code in ((torch.float32, "F32"), (torch.float16, "F16"), (torch.bfloat16, "BF16")):
                path = os.path.join(d, f"{code}.safetensors")
                t = base.to(dtype)
                safetensors_io.save({"x": t, "m": t[:60].reshape(6, 10)}, path)
                h = header_of(path)
                self.assertEqual(h["x"]["dtype"], code)
                self.assertEqual(h["x"]["data_offsets"][1] - h["x"]["data_offsets"][0], t.numel() * t.element_size())
                back = safetensors_io.load(path)
                self.assertEqual(back["x"].dtype, dtype)
                self.assertEqual(list(back["m"].shape), [6, 10])
                bits = torch.int16 if dtype != torch.float32 else torch.int32
                self.assertTrue(torch.equal(back["x"].view(bits), t.view(bits)), code)



class ExportTest(unittest.TestCase):
    """export.py --model-dir --dtype on the tiny and the default model, each exported once."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        for model, src in (("tiny", TINY_MODEL), ("default", DEFAULT_MODEL)):
            for dtype in ("f32", "f16", "bf16"):
                export(src, os.path.join(cls.dir, f"{model}_{dtype}"), dtype)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_f32_re_export_of_the_default_model_is_byte_identical(self):
        # --dtype defaults to f32, and an f32 export must not change today's model by a byte.
        for f in ("weights.safetensors", "model.json", "tokens.txt", "lm.arpa"):
            self.assertTrue(filecmp.cmp(os.path.join(self.dir, "default_f32", f), os.path.join(DEFAULT_MODEL, f),
                                        shallow=False), f)

    def test_half_exports_store_every_tensor_in_their_dtype_at_half_the_size(self):
        for model in ("tiny", "default"):
            f32 = header_of(os.path.join(self.dir, f"{model}_f32", "weights.safetensors"))
            f32.pop("__metadata__", None)
            for dtype, code in (("f16", "F16"), ("bf16", "BF16")):
                h = header_of(os.path.join(self.dir, f"{model}_{dtype}", "weights.safetensors"))
                h.pop("__metadata__", None)
                self.assertEqual({v["dtype"] for v in h.values()}, {code})
                self.assertEqual(sorted(h), sorted(f32))
                self.assertEqual(sum(v["data_offsets"][1] - v["data_offsets"][0] for v in h.values()) * 2,
                                 sum(v["data_offsets"][1] - v["data_offsets"][0] for v in f32.values()))

    def test_engine_widens_what_torch_wrote(self):
        import torch
        import safetensors_io
        self.assertTrue(BINARY and os.access(BINARY, os.X_OK), f"no C++ test binary: {BINARY!r}")
        values = os.path.join(self.dir, "values")
        os.makedirs(values, exist_ok=True)
        g = torch.Generator().manual_seed(5)
        tensors = {"specials": special_values(), "normal": torch.randn(17, 5, generator=g),
                   "wide": torch.randn(300, generator=g) * 10.0 ** torch.randint(-9, 6, (300,), generator=g)}
        reference = {}
        for name, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
            safetensors_io.save({k: v.to(dtype) for k, v in tensors.items()}, os.path.join(values, f"{name}.safetensors"))
            reference.update({f"{name}.{k}": v.to(dtype).float() for k, v in tensors.items()})
        safetensors_io.save(reference, os.path.join(values, "reference.safetensors"))
        r = subprocess.run([BINARY], env=dict(os.environ, SLUICE_DTYPE_DIR=self.dir), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        print(r.stdout)
        self.assertEqual(r.returncode, 0, "the C++ dtype parity tests failed (output above)")


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: python3-torch is not installed (tools/setup.sh --train)")
        sys.exit(SKIP)
    BINARY = sys.argv[1] if len(sys.argv) > 1 else ""
    unittest.main(argv=sys.argv[:1])
