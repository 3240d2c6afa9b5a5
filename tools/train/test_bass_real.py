"""bass_data.py on the real game data: Debian's beneath-a-steel-sky sky.dnr, sky.dsk and sky.cpt,
which tools/setup.sh --test-data (make test) unpacks (without installing the package, which
would pull scummvm) into
${XDG_CACHE_HOME:-~/.cache}/sluice/beneath-a-steel-sky/; or the installed package's files, or
$BASS_DIR. Without them the test exits 77 (ctest: skipped, with the reason printed).

  /usr/bin/python3 tools/train/test_bass_real.py
"""
from __future__ import annotations

import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bass_data  # noqa: E402


def _real_data_dir() -> str | None:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for d in (os.environ.get("BASS_DIR", ""), "/" + bass_data.DATA_DIR,
              os.path.join(cache, "sluice", bass_data.PACKAGE)):
        if d and all(os.path.exists(os.path.join(d, f)) for f in bass_data.DATA_FILES):
            return d
    return None


DATA = _real_data_dir()
if DATA is None:
    print("SKIPPED: sky.dnr/sky.dsk/sky.cpt not found ($BASS_DIR, /" + bass_data.DATA_DIR +
          ", or the cache tools/setup.sh --test-data fills: make test runs it)")
    sys.exit(77)


class RealDataTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.disk = bass_data.Disk(os.path.join(DATA, "sky.dnr"), os.path.join(DATA, "sky.dsk"))
        with open(os.path.join(DATA, "sky.cpt"), "rb") as f:
            cls.lines, cls.stats = bass_data.lines_of(cls.disk, f.read())

    def test_directory_is_the_cd_version(self):
        # ScummVM tells versions apart by the entry count: 5097 is the CD version 0.0372.
        self.assertEqual(len(self.disk.entries), 5097)

    def test_every_text_numbered_clip_is_paired(self):
        # 3,650 speech files: 3,491 reached through text numbers, 159 intro files (59494 on).
        self.assertEqual(self.stats["speech_files"], 3650)
        self.assertEqual(self.stats["unpaired_clips"], 159)
        self.assertGreater(len(self.lines), 0.95 * 3491)

    def test_text_is_english(self):
        # wamerican is one of tools/setup.sh's test packages: missing, this fails
        self.assertTrue(os.path.exists(bass_data.DICTIONARY), bass_data.DICTIONARY)
        words = bass_data.text_norm.load_dictionary(bass_data.DICTIONARY)
        ok = sum(bass_data.mostly_words(ln.text, words) for ln in self.lines)
        self.assertGreater(ok, 0.98 * len(self.lines))

    def test_packed_clips_unpack_with_their_checksums(self):
        # rnc_unpack raises unless both of RNC's CRCs match: 40 random packed clips.
        packed = [ln.clip for ln in self.lines
                  if not self.disk.entries[ln.clip][2] & bass_data.FLAG_STORED]
        self.assertGreater(len(packed), 3000)
        for clip in random.Random(3).sample(packed, 40):
            samples = bass_data.speech_samples(self.disk.load(clip))
            self.assertGreater(len(samples), 0)
            mean = sum(samples) / len(samples)
            self.assertTrue(110 < mean < 146, (clip, mean))   # unsigned 8-bit centred on 128

    def test_audio_length_follows_text_length(self):
        picks = random.Random(7).sample([ln for ln in self.lines if len(ln.text) > 3], 40)
        chars = [len(ln.text) for ln in picks]
        secs = [len(bass_data.speech_samples(self.disk.load(ln.clip))) / bass_data.SAMPLE_RATE
                for ln in picks]
        rank = lambda xs: [sorted(xs).index(x) for x in xs]  # noqa: E731
        rc, rs = rank(chars), rank(secs)
        n = len(picks)
        rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rc, rs)) / (n * (n * n - 1))
        self.assertGreater(rho, 0.6, list(zip(chars, secs)))

    def test_speakers_found(self):
        per: dict[str, int] = {}
        for ln in self.lines:
            per[ln.speaker] = per.get(ln.speaker, 0) + 1
        self.assertGreater(per.get("foster", 0), 500)
        self.assertGreater(sum(n for s, n in per.items() if s.startswith("npc-s")), 1000)
        self.assertLess(per.get("unknown", 0), 0.35 * len(self.lines))


if __name__ == "__main__":
    unittest.main()
