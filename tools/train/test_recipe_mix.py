"""Tests of the human-voice training mix (voices.py --mix human) and the real-speech hold-out
(real_data.py). Stdlib + numpy only; no TTS engine or Debian voice package is needed.

  /usr/bin/python3 -m unittest discover -s tools/train -p 'test_recipe_mix.py'
"""
from __future__ import annotations

import collections
import os
import random
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import real_data  # noqa: E402
import voices  # noqa: E402

ALL_FLITE = list(voices.FLITE_VOICES)


def _inventory(voice_class: str, mix: str, commercial_only: bool = False) -> voices.Inventory:
    # Pretend every recording-based voice is installed, so the test does not depend on the
    # machine's packages.
    with mock.patch.object(voices, "rhvoice_available", return_value=sorted(voices.RHVOICE_VOICES)), \
         mock.patch.object(voices, "pico_available", return_value=list(voices.PICO_VOICES)), \
         mock.patch.object(voices, "mbrola_available", return_value=list(voices.MBROLA_VOICES)):
        return voices.Inventory(voice_class, ALL_FLITE, True, mix, commercial_only)


class HumanMixTest(unittest.TestCase):
    DRAWS = 4000

    def draw(self, voice_class: str) -> collections.Counter:
        inv = _inventory(voice_class, "human")
        rng = random.Random(5)
        return collections.Counter(inv.draw(rng) for _ in range(self.DRAWS))

    def test_train_draws_only_train_voices_and_few_formant_voices(self):
        drawn = self.draw("train")
        for v in drawn:
            self.assertEqual(voices.voice_split(v), "train", v)
        espeak = sum(n for v, n in drawn.items() if v.startswith("espeak:"))
        # The mix asks for 10% formant voices; 4000 draws put the share within +-3 points.
        self.assertLess(espeak / self.DRAWS, 0.13)
        engines = {v.split(":", 1)[0] for v in drawn}
        self.assertTrue({"rhvoice", "mbrola", "pico", "flite", "festival"} <= engines, engines)

    def test_unseen_test_voices_are_recorded_speakers_never_in_train(self):
        drawn = self.draw("test")
        self.assertFalse([v for v in drawn if v.startswith("espeak:")])
        train = self.draw("train")
        self.assertFalse(set(drawn) & set(train))
        for want in ("rhvoice:clb", "pico:en-GB", "mbrola:us2", "flite:rms", "festival:ked_diphone"):
            self.assertIn(want, drawn)

    def test_formant_mix_is_unchanged_by_installed_recorded_voices(self):
        inv = _inventory("train", "formant")
        rng = random.Random(1)
        engines = {inv.draw(rng).split(":", 1)[0] for _ in range(2000)}
        self.assertEqual(engines, {"espeak", "flite", "festival"})

    def test_commercial_only_drops_non_commercial_voices(self):
        rng = random.Random(3)
        full = {_inventory("train", "human").draw(rng) for _ in range(3000)}
        self.assertTrue(voices.NONCOMMERCIAL_VOICES <= full)
        inv = _inventory("train", "human", commercial_only=True)
        drawn = {inv.draw(rng) for _ in range(3000)}
        self.assertFalse(drawn & voices.NONCOMMERCIAL_VOICES)
        self.assertIn("rhvoice:alan", drawn)

    def test_new_engines_have_parameters(self):
        rng = random.Random(2)
        for v in ("rhvoice:alan", "pico:en-US", "mbrola:us1"):
            self.assertTrue(voices.draw_tts_params(v, rng), v)


def _fake_prompts():
    """Prompt names shaped like asterisk's: sets of different sizes, digits, silence."""
    out = []
    for s, n in (("vm", 40), ("conf", 12), ("queue", 9), ("agent", 7), ("dir", 6), ("pbx", 4),
                 ("followme", 5), ("priv", 3), ("spy", 8), ("auth", 2), ("hello", 1)):
        out += [(f"{s}-p{i}", f"/x/{s}-p{i}.wav", f"prompt {s} number {i}") for i in range(n)]
    out += [(f"digits/{i}", f"/x/digits/{i}.wav", "word") for i in range(20)]
    out += [(f"phonetic/{c}_p", f"/x/phonetic/{c}_p.wav", "word") for c in "abcdefgh"]
    return out


class RealHoldoutTest(unittest.TestCase):
    def test_prompt_set_names(self):
        self.assertEqual(real_data.prompt_set("digits/7"), "digits")
        self.assertEqual(real_data.prompt_set("vm-intro"), "vm")
        self.assertEqual(real_data.prompt_set("agent_loginok"), "agent")

    def test_whole_prompt_sets_are_held_out(self):
        prompts = _fake_prompts()
        plans = real_data.plans(prompts, copies=3, seed=1, shard_size=50)
        sets = {sp: {u["source"] for shard in shards for u in shard} for sp, shards in plans.items()}
        self.assertTrue(sets["test_real"])
        self.assertFalse(sets["train_real"] & sets["test_real"])
        self.assertEqual(sets["test_real"], sets["test_real_phone"])
        for s in real_data.ALWAYS_TRAIN_SETS & {"digits", "phonetic"}:
            self.assertIn("asterisk:" + s, sets["train_real"])

    def test_held_out_share_and_copies(self):
        prompts = _fake_prompts()
        eligible = [p for p in prompts if real_data.prompt_set(p[0]) not in real_data.ALWAYS_TRAIN_SETS]
        plans = real_data.plans(prompts, copies=3, seed=1, shard_size=50)
        n = {sp: sum(len(s) for s in shards) for sp, shards in plans.items()}
        self.assertGreaterEqual(n["test_real"], real_data.TEST_FRACTION * len(eligible))
        self.assertEqual(n["test_real"], n["test_real_phone"])
        self.assertEqual(n["train_real"], 3 * (len(prompts) - n["test_real"]))
        train = [u for shard in plans["train_real"] for u in shard]
        # The first copy of each training prompt is as recorded, the others augmented.
        clean = [u for u in train if u["condition"] == "clean"]
        self.assertEqual(len(clean), len(prompts) - n["test_real"])
        phone = [u for shard in plans["test_real_phone"] for u in shard]
        self.assertTrue(all("channel" in u["augment"] for u in phone))

    def test_plan_is_deterministic(self):
        a = real_data.plans(_fake_prompts(), 3, 1, 50)
        b = real_data.plans(list(reversed(_fake_prompts())), 3, 1, 50)
        key = lambda p: sorted(u["id"] for shard in p["test_real"] for u in shard)  # noqa: E731
        self.assertEqual(key(a), key(b))

    def test_silence_is_never_speech(self):
        if not os.path.exists(real_data.ASTERISK_TEXT):
            self.skipTest("asterisk-core-sounds-en-wav not installed")
        names = [p[0] for p in real_data.asterisk_prompts()]
        self.assertTrue(names)
        self.assertFalse([n for n in names if n.startswith("silence/")])


if __name__ == "__main__":
    unittest.main()
