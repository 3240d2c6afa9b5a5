"""fotaq_data.py on the real game data: Debian's flight-of-the-amazon-queen queen.1c, which
tools/setup.sh --test-data (make test) unpacks (without installing the package, which would
pull scummvm) into
${XDG_CACHE_HOME:-~/.cache}/sluice/flight-of-the-amazon-queen/; or the installed package's file,
or $FOTAQ_1C. Without it the test exits 77 (ctest: skipped, with the reason printed).

  /usr/bin/python3 tools/train/test_fotaq_real.py
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fotaq_data  # noqa: E402


def _real_data_file() -> str | None:
    for p in (os.environ.get("FOTAQ_1C", ""), "/" + fotaq_data.DATA_FILE, fotaq_data.setup_cache_file()):
        if p and os.path.exists(p):
            return p
    return None


DATA = _real_data_file()
if DATA is None:
    print("SKIPPED: queen.1c not found ($FOTAQ_1C, /" + fotaq_data.DATA_FILE + ", or the cache "
          "tools/setup.sh --test-data fills: make test runs it)")
    sys.exit(77)
if shutil.which("ffmpeg") is None:
    print("SKIPPED: ffmpeg not installed (tools/setup.sh installs it)")
    sys.exit(77)


class RealDataTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.archive = fotaq_data.Archive(DATA)
        cls.lines, cls.stats = fotaq_data.lines_of(cls.archive)
        cls.by_clip = {ln.clip: ln for ln in cls.lines}

    def test_most_speech_clips_are_paired(self):
        clips = self.archive.names(".SB")   # speech and a few sound effects
        self.assertEqual(len(clips), 6745)
        self.assertGreater(len(self.lines), 0.9 * len(clips))
        self.assertEqual(self.stats["cutaways_misparsed"], [])

    def test_known_lines(self):
        # Read off the raw data: C1A.CUT's 4th object (Sparky) asks about the coupon in one
        # segment; SPARKY1.DOG (talk key 51) person line 1 is "Could be better Joe.*00The
        # plane is pretty badly damaged."; description 1 is Joe's "I don't see anything special".
        want = {"C1A__041": ("is it the commander rocket authentic secret pocket rocket decoder "
                             "ring coupon", "sparky"),
                "510001P1": ("could be better joe", "sparky"),
                "510001P2": ("the plane is pretty badly damaged", "sparky"),
                "JOE00411": ("i don't see anything special", "joe")}
        for clip, (text, speaker) in want.items():
            self.assertIn(clip, self.by_clip)
            self.assertEqual((self.by_clip[clip].text, self.by_clip[clip].speaker), (text, speaker))

    def test_audio_length_follows_text_length(self):
        import soundfile as sf
        picks = ["C1A__041", "C1A__051", "C1A__052", "C1A__063", "510001P1", "510001P2",
                 "JOE00411", "JOE00431"]
        secs = []
        with tempfile.TemporaryDirectory() as d:
            for clip in picks:
                path = os.path.join(d, clip + ".wav")
                fotaq_data.decode(self.archive.read(clip + ".SB"), path)
                info = sf.info(path)
                self.assertEqual((info.samplerate, info.channels, info.subtype), (11025, 1, "PCM_16"))
                secs.append(info.duration)
        chars = [len(self.by_clip[c].text) for c in picks]
        # Speech runs at roughly 8-25 characters a second: the lengths must agree in order.
        rank = lambda xs: [sorted(xs).index(x) for x in xs]  # noqa: E731
        rc, rs = rank(chars), rank(secs)
        n = len(picks)
        rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rc, rs)) / (n * (n * n - 1))
        self.assertGreater(rho, 0.7, list(zip(picks, chars, secs)))
        for c, s in zip(chars, secs):
            self.assertTrue(4 <= c / s <= 30, (c, s))


if __name__ == "__main__":
    unittest.main()
