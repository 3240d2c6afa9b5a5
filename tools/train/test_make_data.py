"""Tests of the training-data generator (text, grammar, hold-out, voices, augmentation).

  /usr/bin/python3 -m unittest discover -s tools/train -p 'test_make_data.py'

Tests that run sox / opus-tools are skipped where those are missing. SLUICE_TEST_E2E=1 also runs a
tiny end-to-end generation (about two minutes on two cores: it checks every espeak voice first).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import augment  # noqa: E402
import call_grammar  # noqa: E402
import corpus  # noqa: E402
import text_norm  # noqa: E402
import voices  # noqa: E402

HAVE_SOX = shutil.which("sox") is not None
HAVE_OPUS = shutil.which("opusenc") is not None and shutil.which("opusdec") is not None


class TokensTest(unittest.TestCase):
    def test_tokens_file(self):
        toks = text_norm.load_tokens()
        self.assertEqual(len(toks), 29)
        self.assertEqual(toks[0], "<blank>")
        self.assertEqual(toks[1:27], list("abcdefghijklmnopqrstuvwxyz"))
        self.assertEqual(toks[27:], ["'", " "])
        self.assertEqual(text_norm.text_to_ids("a b'", toks), [1, 28, 2, 27])


class NormalizeTest(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(text_norm.cardinal(1234), "one thousand two hundred thirty four")
        self.assertEqual(text_norm.cardinal(105, use_and=True), "one hundred and five")
        self.assertEqual(text_norm.ordinal(23), "twenty third")
        self.assertEqual(text_norm.ordinal(12), "twelfth")
        self.assertEqual(text_norm.year(1984), "nineteen eighty four")
        self.assertEqual(text_norm.year(2005), "two thousand five")
        self.assertEqual(text_norm.year(1905), "nineteen oh five")

    def test_free_text(self):
        n = text_norm.normalize
        self.assertEqual(n("I owe $12.50, don't I?"),
                         "i owe twelve dollars and fifty cents, don't i?")
        self.assertEqual(n("Mr. Smith, 3rd floor; 50% off!", keep_punct=False),
                         "mister smith third floor fifty percent off")
        self.assertEqual(n("It's 3.14 -- roughly."), "it's three point one four roughly.")
        for bad in ("Visit St. Louis", "the U.S. is big", "e.g. this"):
            with self.assertRaises(text_norm.Rejected):
                n(bad)

    def test_transcript(self):
        self.assertEqual(text_norm.to_transcript("hello, world! 'quoted' it's."),
                         "hello world quoted it's")
        self.assertTrue(text_norm.in_vocabulary("it's a b"))
        self.assertFalse(text_norm.in_vocabulary("it's  a"))
        self.assertFalse(text_norm.in_vocabulary("x1"))

    def test_spoken_transcript(self):
        # Lines of asterisk-core-sounds-en's transcript file: the digits are what the speaker says.
        st = text_norm.spoken_transcript
        self.assertEqual(st("Please press 1 to mute or unmute yourself, 4 or 6 to decrease the volume."),
                         "please press one to mute or unmute yourself four or six to decrease the volume")
        self.assertEqual(st("Use the 7 key for Q, and the 9 key for Z."), "use the seven key for q and the nine key for z")
        self.assertEqual(st("folder 5"), "folder five")
        self.assertEqual(st("Press zero for mailbox options."), "press zero for mailbox options")
        # Where the text does not say what was spoken, the line is refused, not cut.
        for bad in ('IAX (note: does not say "2")', "3D audio enabled", "H.323", "press 0 for help",
                    "you can dial 500 to attempt", "a 28.8 kilobit modem", "[this is a simple beep tone]",
                    "<beep decending>", "press * to toggle pause, press # to enter", "@@ I think I'm in love @@",
                    "visit www.asterisk.org for more"):
            with self.assertRaises(text_norm.Rejected, msg=bad):
                st(bad)
        # The transcript file's own typos are corrected to what is said.
        import real_data
        self.assertEqual(real_data.prompt_transcript("Press 3 to mute or umute all non-administrator users."),
                         "press three to mute or unmute all non administrator users")
        # to_transcript alone drops the digit: the labels the models trained on before this.
        self.assertEqual(text_norm.to_transcript("press 1 to mute"), "press to mute")


class GrammarTest(unittest.TestCase):
    def test_rules_complete(self):
        self.assertEqual(call_grammar.check_rules(), [])

    def test_output_in_vocabulary(self):
        rng = random.Random(7)
        seen = set()
        for _ in range(3000):
            tts = call_grammar.expand(rng)
            tr = text_norm.to_transcript(tts)
            self.assertTrue(text_norm.in_vocabulary(tr), tts)
            self.assertLessEqual(len(tr.split()), call_grammar.MAX_WORDS)
            self.assertIn(tts[-1], ".?!")
            self.assertNotRegex(tts, r"[,.?!][,.?!]|\s[,.?!]|\d")
            seen.add(tr)
        self.assertGreater(len(seen), 2000)      # thousands of distinct sentences

    def test_deterministic(self):
        a = [call_grammar.expand(random.Random(3)) for _ in range(5)]
        b = [call_grammar.expand(random.Random(3)) for _ in range(5)]
        self.assertEqual(a, b)

    def test_digit_groups(self):
        rng = random.Random(1)
        for n in range(4, 16):
            g = call_grammar._groups(n, rng)
            self.assertEqual(sum(g), n)
            self.assertTrue(all(2 <= x <= 4 for x in g), g)


class HoldoutTest(unittest.TestCase):
    def test_short_sentences_train(self):
        self.assertEqual(corpus.holdout_split("thank you for holding"), "train")

    def test_rates_and_stability(self):
        rng = random.Random(5)
        counts = {"train": 0, "dev": 0, "test": 0}
        for _ in range(20000):
            tr = text_norm.to_transcript(call_grammar.expand(rng))
            s = corpus.holdout_split(tr)
            self.assertEqual(s, corpus.holdout_split(tr))
            counts[s] += 1
        self.assertGreater(counts["dev"], 150)
        self.assertGreater(counts["test"], 150)

    def test_source_respects_split(self):
        fortunes = ["one two three four five six.", "we were happily married for eight months."]
        fortunes += [f"this is sentence number {text_norm.cardinal(i)} of many." for i in range(3000)]
        for split in ("train", "dev", "test"):
            src = corpus.SentenceSource(fortunes, split)
            rng = random.Random(split)
            for _ in range(200):
                _, tr, _ = src.draw(rng)
                self.assertEqual(corpus.holdout_split(tr), split)


class VoicesTest(unittest.TestCase):
    def test_split_of_ids(self):
        self.assertEqual(voices.voice_split("flite:rms"), "test")
        self.assertEqual(voices.voice_split("flite:slt"), "train")
        self.assertEqual(voices.voice_split("festival:ked_diphone"), "test")
        self.assertEqual(voices.voice_split("espeak:en-us-nyc+klatt"), "test")
        self.assertEqual(voices.voice_split("espeak:en-us+klatt4"), "test")
        self.assertEqual(voices.voice_split("espeak:en-us+klatt5"), "dev")
        self.assertEqual(voices.voice_split("espeak:en-us+sluice_g010"), "test")
        self.assertEqual(voices.voice_split("espeak:en-us+sluice_g011"), "dev")
        self.assertEqual(voices.voice_split("espeak:en+sluice_g012"), "train")
        self.assertEqual(voices.voice_split("espeak:en-gb-x-rp"), "train")

    def test_inventories_disjoint(self):
        flite = list(voices.FLITE_VOICES)
        for c in ("train", "dev", "test"):
            inv = voices.Inventory(c, flite, True)
            rng = random.Random(c)
            for _ in range(500):
                self.assertEqual(voices.voice_split(inv.draw(rng)), c)

    def test_held_out_variants_exist(self):
        shipped = set(voices.shipped_variants())
        self.assertLessEqual(voices.TEST_VARIANTS | voices.DEV_VARIANTS, shipped)
        self.assertFalse(voices.TEST_VARIANTS & voices.DEV_VARIANTS)

    def test_generated_variants_fixed(self):
        a = voices.generated_variant_text("sluice_g007")
        self.assertEqual(a, voices.generated_variant_text("sluice_g007"))
        self.assertIn("formant 1 ", a)
        self.assertNotEqual(a, voices.generated_variant_text("sluice_g008"))

    def test_espeak_args_use_voice_files(self):
        args = voices.espeak_args("/r", "espeak:en-gb-scotland+sluice_g160")
        self.assertEqual(args, ["--path=/r/r1", "-v", "gmw/en-GB-scotland+sluice_g160"])


class AugmentTest(unittest.TestCase):
    def test_conditions(self):
        rng = random.Random(0)
        for _ in range(200):
            c = augment.draw(rng, "clean")
            self.assertEqual(set(c), {"pad_s"})
            p = augment.draw(rng, "phone_noise")
            self.assertIn("channel", p)
            self.assertIn("noise", p)
            self.assertNotIn("pitch_cents", p)
            self.assertGreaterEqual(p["noise"]["snr_db"], 5.0)
            t = augment.draw(rng, "train")
            if "speed" in t:
                self.assertTrue(0.9 <= t["speed"] <= 1.1)

    def test_noise_snr(self):
        import numpy as np
        t = np.arange(32000) / 16000.0
        x = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
        for kind in ("white", "pink", "brown"):
            a = {"pad_s": [0, 0], "noise": {"type": kind, "snr_db": 10.0, "seed": 1,
                                             "babble_talkers": 3}}
            y = augment.noise_and_level(x, a, [])
            noise = y.astype(np.float64) - x
            snr = 10 * np.log10(np.mean(x.astype(np.float64) ** 2) / np.mean(noise ** 2))
            self.assertAlmostEqual(snr, 10.0, delta=0.5)

    @unittest.skipUnless(HAVE_SOX and HAVE_OPUS, "sox / opus-tools missing")
    def test_channels(self):
        import numpy as np
        rng = np.random.default_rng(0)
        x = (0.1 * rng.standard_normal(16000)).astype(np.float32)
        for codec in augment.CODECS:
            ch = augment._draw_channel(random.Random(codec), codec)
            y = augment.channel(x, ch)
            self.assertEqual(len(y), len(x))
            self.assertTrue(np.array_equal(y, augment.channel(x, ch)), codec)   # deterministic
            spec = np.abs(np.fft.rfft(y)) ** 2
            f = np.fft.rfftfreq(len(y), 1 / 16000)
            self.assertLess(spec[f > 4200].sum() / spec.sum(), 1e-3, codec)


@unittest.skipUnless(os.environ.get("SLUICE_TEST_E2E") == "1" and HAVE_SOX and HAVE_OPUS,
                     "set SLUICE_TEST_E2E=1")
class EndToEndTest(unittest.TestCase):
    def test_tiny_run_and_resume(self):
        out = tempfile.mkdtemp(prefix="sluice-data-")
        try:
            cmd = [sys.executable, os.path.join(HERE, "make_data.py"), "--out", out,
                   "--hours", "0.002", "--shard-size", "4", "--dev-utts", "2", "--test-utts", "2",
                   "--lm-extra", "10", "--splits", "train,test_clean,test_unseen_phone"]
            subprocess.run(cmd, check=True, capture_output=True)
            with open(os.path.join(out, "manifests", "train.jsonl")) as f:
                first = [json.loads(x) for x in f]
            self.assertTrue(first)
            for u in first:
                self.assertTrue(os.path.exists(os.path.join(out, u["path"])))
                self.assertTrue(text_norm.in_vocabulary(u["text"]))
            r = subprocess.run(cmd, check=True, capture_output=True, text=True)
            self.assertNotIn("to make", r.stdout)              # everything skipped
            with open(os.path.join(out, "manifests", "train.jsonl")) as f:
                self.assertEqual(first, [json.loads(x) for x in f])
        finally:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
