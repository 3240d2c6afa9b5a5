"""Tests of uqm_data.py: the dialogue/timing parser, the line cuts and the speaker hold-out, on a
small archive pair written here in the game's layout (no Debian package needed).

  /usr/bin/python3 -m unittest discover -s tools/train -p 'test_uqm_data.py'
"""
from __future__ import annotations

import io
import os
import sys
import tempfile
import unittest
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import uqm_data  # noqa: E402

SR = 11025

# Two blocks with clips, one without (text only), one whose timing count is wrong.
SPATHI_TXT = """#(GREET)\tspathi-000.ogg
Hello there, big alien.
The coordinates are 241.6 and 368.7
Go away St. Fwiffo please!

#(no_clip)
Attention alien vessel: Identify yourself!

#(BROKEN)\tspathi-001.ogg
one line
two lines
three lines
"""
SPATHI_TS = "#(GREET) 1000,1500\n#(no_clip) \n#(BROKEN) 700\n"


def _wav_bytes(seconds: float, freq: float) -> bytes:
    import soundfile as sf
    t = np.arange(int(seconds * SR)) / SR
    buf = io.BytesIO()
    sf.write(buf, 0.3 * np.sin(2 * np.pi * freq * t), SR, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def _archives(root: str, races: dict[str, tuple[str, str]]) -> tuple[str, str]:
    v, c = os.path.join(root, "voice.uqm"), os.path.join(root, "content.uqm")
    with zipfile.ZipFile(v, "w") as vz, zipfile.ZipFile(c, "w") as cz:
        for race, (txt, ts) in races.items():
            cz.writestr(f"base/comm/{race}/{race}.txt", txt)
            vz.writestr(f"3dovoice/{race}/{race}.ts", ts)
            # soundfile finds the format from the bytes, so WAV data under the .ogg name reads.
            vz.writestr(f"3dovoice/{race}/{race}-000.ogg", _wav_bytes(4.0, 440))
            vz.writestr(f"3dovoice/{race}/{race}-001.ogg", _wav_bytes(3.0, 220))
    return v, c


class ParseTest(unittest.TestCase):
    def test_blocks_and_timings(self):
        blocks = uqm_data.parse_text(SPATHI_TXT)
        self.assertEqual(sorted(blocks), ["BROKEN", "GREET"])  # no_clip has no .ogg
        self.assertEqual(blocks["GREET"][0], "spathi-000.ogg")
        self.assertEqual(len(blocks["GREET"][1]), 3)
        ts = uqm_data.parse_ts(SPATHI_TS)
        self.assertEqual(ts, {"GREET": [1000, 1500], "BROKEN": [700]})


class LinesTest(unittest.TestCase):
    def test_cuts_follow_the_timings_and_the_last_line_runs_to_the_end(self):
        with tempfile.TemporaryDirectory() as d:
            v, c = _archives(d, {"spathi": (SPATHI_TXT, SPATHI_TS)})
            lines = list(uqm_data.lines_of(v, c))
            # GREET: line 0 and 1 kept (digits spelt out), line 2 rejected by the normaliser
            # ('St.' has no safe reading); BROKEN: 3 lines but 1 duration -> skipped.
            self.assertEqual([(ln[1], ln[2], ln[4], ln[5]) for ln in lines],
                             [("GREET", 0, 0, 1000), ("GREET", 1, 1000, 2500)])
            self.assertEqual(lines[0][6], "hello there big alien")
            self.assertEqual(lines[1][6], "the coordinates are two hundred forty one point six "
                                          "and three hundred sixty eight point seven")
            wavs = uqm_data.cut_lines(v, lines, os.path.join(d, "lines"))
            import soundfile as sf
            a, sr = sf.read(wavs[("spathi", "GREET", 0)])
            b, _ = sf.read(wavs[("spathi", "GREET", 1)])
            self.assertEqual(sr, SR)
            self.assertEqual(len(a), int(1.0 * SR))
            self.assertEqual(len(b), int(2.5 * SR) - int(1.0 * SR))

    def test_last_line_to_clip_end(self):
        txt = "#(X)\tvux-000.ogg\nfirst words here\nsecond words here\n"
        with tempfile.TemporaryDirectory() as d:
            v, c = _archives(d, {"vux": (txt, "#(X) 1200\n")})
            lines = list(uqm_data.lines_of(v, c))
            self.assertEqual([(ln[4], ln[5]) for ln in lines], [(0, 1200), (1200, None)])
            wavs = uqm_data.cut_lines(v, lines, os.path.join(d, "lines"))
            import soundfile as sf
            x, _ = sf.read(wavs[("vux", "X", 1)])
            self.assertEqual(len(x), 4 * SR - int(1.2 * SR))


class HoldoutTest(unittest.TestCase):
    def lines(self):
        out = []
        races = ["spathi", "vux", "utwig", "supox", "melnorme", "yehat", "yehatrebels", "probe",
                 "orz", "starbase", "pkunk", "syreen"]
        for r in races:
            for i in range(20 + 5 * len(r)):
                out.append((r, "K", i, f"{r}.ogg", 0, 1000, "some words"))
        return out

    def test_whole_speakers_held_out_never_processed_ones(self):
        lines = self.lines()
        held = uqm_data.test_speakers(lines)
        self.assertTrue(held)
        self.assertFalse(held & uqm_data.PROCESSED)
        self.assertNotIn("yehatrebels", held)  # counted as yehat
        n_held = sum(uqm_data.speaker(ln[0]) in held for ln in lines)
        self.assertGreaterEqual(n_held, uqm_data.TEST_FRACTION * len(lines))
        wavs = {ln[:3]: "/nonexistent.wav" for ln in lines}
        plans = uqm_data.plans(lines, wavs, held, copies=2, seed=1, shard_size=50)
        train = {u["voice"] for shard in plans["train_uqm"] for u in shard}
        test = {u["voice"] for shard in plans["test_uqm"] for u in shard}
        self.assertTrue(train and test)
        self.assertFalse(train & test)
        self.assertEqual(sum(len(s) for s in plans["train_uqm"]),
                         2 * sum(uqm_data.speaker(ln[0]) not in held for ln in lines))
        self.assertEqual({u["condition"] for s in plans["test_uqm_phone"] for u in s}, {"phone_noise"})


if __name__ == "__main__":
    unittest.main()
