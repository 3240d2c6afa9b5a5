"""Tests of train.py's time-shift augmentation (time_shift): whole-frame and fractional moves of
each utterance, lengths, short utterances and the off switch. Needs python3-torch; exits 77
without it, which ctest reports as skipped (not passed).

  /usr/bin/python3 tools/train/test_time_shift.py
"""
from __future__ import annotations

import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import torch
except ImportError:
    print("SKIPPED: python3-torch is not installed", file=sys.stderr)
    sys.exit(77)
import train  # noqa: E402


class FixedRng(random.Random):
    """randrange and random return the values given, in order."""

    def __init__(self, ks: list[int], fracs: list[float]):
        super().__init__(0)
        self.ks, self.fracs = list(ks), list(fracs)

    def randrange(self, *args, **kwargs):  # noqa: D401
        return self.ks.pop(0)

    def random(self):
        return self.fracs.pop(0)


def ramp(batch: int, frames: int, bins: int = 3) -> torch.Tensor:
    # Frame t of every bin holds 10 t + bin: a shift by s frames reads 10 (t + s) + bin.
    t = torch.arange(frames, dtype=torch.float32).view(1, frames, 1) * 10
    return (t + torch.arange(bins, dtype=torch.float32).view(1, 1, bins)).repeat(batch, 1, 1)


class TimeShiftTest(unittest.TestCase):
    def test_whole_and_fractional_frames_move_the_features_earlier(self):
        x, lengths = ramp(2, 30), torch.tensor([30, 25])
        y, n = train.time_shift(x, lengths, FixedRng([2, 0], [0.25, 0.5]), 4)
        # Row 0: 2 frames and a quarter earlier; k + 1 frames shorter.
        self.assertEqual(int(n[0]), 27)
        torch.testing.assert_close(y[0, :27], ramp(1, 30)[0, :27] + 22.5)
        self.assertTrue(torch.all(y[0, 27:] == 0))
        # Row 1 (25 valid frames): half a frame earlier, 24 frames left, padding stays zero.
        self.assertEqual(int(n[1]), 24)
        torch.testing.assert_close(y[1, :24], ramp(1, 30)[0, :24] + 5.0)
        self.assertTrue(torch.all(y[1, 24:] == 0))

    def test_zero_shift_keeps_the_features(self):
        x, lengths = ramp(1, 20), torch.tensor([20])
        y, n = train.time_shift(x, lengths, FixedRng([0], [0.0]), 4)
        torch.testing.assert_close(y[0, :19], x[0, :19])
        self.assertEqual(int(n[0]), 19)

    def test_too_short_utterances_and_the_off_switch_are_left_alone(self):
        x, lengths = ramp(1, 10), torch.tensor([10])
        y, n = train.time_shift(x, lengths, FixedRng([3], [0.5]), 4)   # 10 - 3 - 1 < 8
        self.assertTrue(torch.equal(y, x))
        self.assertEqual(int(n[0]), 10)
        y, n = train.time_shift(x, lengths, FixedRng([], []), 0)
        self.assertIs(y, x)

    def test_random_shifts_cover_every_phase_of_the_subsampling(self):
        rng = random.Random(7)
        x, lengths = ramp(1, 100), torch.tensor([100])
        phases, fractional = set(), 0
        for _ in range(200):
            y, _ = train.time_shift(x, lengths, rng, 4)
            shift = (float(y[0, 0, 0]) - 0.0) / 10      # frames moved, fraction included
            self.assertGreaterEqual(shift, 0.0)
            self.assertLess(shift, 4.0)
            phases.add(int(shift))
            if 0.05 < shift - int(shift) < 0.95:
                fractional += 1
        self.assertEqual(phases, {0, 1, 2, 3})
        # a is uniform in [0, 1): about 90% of the draws fall inside (0.05, 0.95)
        self.assertGreater(fractional, 150)


if __name__ == "__main__":
    unittest.main()
