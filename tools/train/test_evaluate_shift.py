"""Tests of evaluate.py's engine runs: --set overrides reach the command line, the engine runs
without redaction (it would score "[card]" against spoken digits), --manifest adds an
extractor's held-out rows as a condition, the n-best oracle (--oracle: the best of each
segment's alternative readings against the reference), and the
delayed-audio measurement (shift_eval): sox pads each file with the
delay's silence in the file's own format, the delayed files are decoded, and WER against the
reference, WER against the undelayed text and the share of changed utterances are computed per
condition. The engine here is a stand-in script whose text depends on how many silent samples
open the file, so the expected numbers follow from the delays alone. Needs sox.

  /usr/bin/python3 tools/train/test_evaluate_shift.py
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import tempfile
import unittest
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

if shutil.which("sox") is None:
    print("SKIPPED: sox is not installed", file=sys.stderr)
    sys.exit(77)
try:
    import evaluate  # noqa: E402  (imports torch)
except ImportError as e:
    print(f"SKIPPED: {e}", file=sys.stderr)
    sys.exit(77)

# Prints `sluice transcribe --format json` documents: "one two three" for a file that starts with
# fewer than 10 silent samples, "one two four" otherwise (an empty second segment, as the engine
# prints for a segment with no words).
FAKE_ENGINE = r'''#!/usr/bin/python3
import json, sys, wave, struct
files = [a for a in sys.argv[1:] if a.endswith(".wav")]
for f in files:
    w = wave.open(f)
    n = min(w.getnframes(), 100)
    samples = struct.unpack("<%dh" % n, w.readframes(n))
    lead = next((i for i, s in enumerate(samples) if s != 0), n)
    text = "one two three" if lead < 10 else "one two four"
    if "--decoder.lexicon_lm_weight=1.5" in sys.argv:
        text += " weighted"
    print(json.dumps({"file": f, "channels": [{"segments": [{"text": text}, {"text": ""}]}]}))
'''


def write_wav(path: str, rate: int, n: int) -> None:
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(int(1000 + (i % 7)).to_bytes(2, "little", signed=True) for i in range(n)))


class ShiftEvalTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sluice-shift-test-")
        self.engine = os.path.join(self.tmp, "fake_sluice")
        with open(self.engine, "w") as f:
            f.write(FAKE_ENGINE)
        os.chmod(self.engine, os.stat(self.engine).st_mode | stat.S_IEXEC)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_delays_move_the_text_by_what_the_stand_in_engine_hears(self):
        a, b = os.path.join(self.tmp, "a.wav"), os.path.join(self.tmp, "b.wav")
        write_wav(a, 8000, 8000)
        write_wav(b, 16000, 16000)
        files = sorted([os.path.realpath(a), os.path.realpath(b)])
        conditions = {"narrow": [(os.path.realpath(a), "one two three")],
                      "both": [(os.path.realpath(a), "one two three"), (os.path.realpath(b), "one two four")]}
        args = argparse.Namespace(engine=self.engine, model_dir=self.tmp, threads=2, shift_decoder="lexicon")
        by_mode: dict = {}
        # 0.5 ms: 4 samples at 8 kHz, 8 at 16 kHz (under 10: unchanged); 2.5 ms: 20 and 40.
        out = evaluate.shift_eval(args, conditions, files, by_mode, [0.5, 2.5])
        self.assertEqual(out["decoder"], "lexicon")
        self.assertIn("lexicon", by_mode)           # the undelayed run, made since none was given
        early, late = out["conditions"]["narrow"]["0.5"], out["conditions"]["narrow"]["2.5"]
        self.assertEqual(early, {"utts": 1, "wer": 0.0, "wer_vs_undelayed": 0.0, "changed_utts": 0.0})
        self.assertEqual(late["changed_utts"], 1.0)
        self.assertAlmostEqual(late["wer"], 1 / 3)
        self.assertAlmostEqual(late["wer_vs_undelayed"], 1 / 3)
        both = out["conditions"]["both"]["2.5"]
        self.assertEqual(both["changed_utts"], 1.0)
        # b's reference is "one two four": delayed, it becomes right; a's becomes wrong.
        self.assertAlmostEqual(both["wer"], 1 / 6)
        self.assertAlmostEqual(both["wer_vs_undelayed"], 2 / 6)

    def test_set_overrides_reach_the_engine_command_line(self):
        a = os.path.join(self.tmp, "a.wav")
        write_wav(a, 8000, 800)
        args = argparse.Namespace(engine=self.engine, model_dir=self.tmp, set=["decoder.lexicon_lm_weight=1.5"])
        hyps, _ = evaluate.engine_transcribe(args, "lexicon", [os.path.realpath(a)])
        self.assertEqual(hyps, {os.path.realpath(a): "one two three weighted"})
        args.set = []
        hyps, _ = evaluate.engine_transcribe(args, "lexicon", [os.path.realpath(a)])
        self.assertEqual(hyps, {os.path.realpath(a): "one two three"})

    def test_the_engine_runs_without_redaction(self):
        # A stand-in that masks digit words the way the engine's redaction does, unless told not to.
        redacting = os.path.join(self.tmp, "redacting_sluice")
        with open(redacting, "w") as f:
            f.write("#!/usr/bin/python3\nimport json, sys\n"
                    "text = 'my pin is one two' if '--postproc.redact=false' in sys.argv else 'my pin is [card]'\n"
                    "for a in sys.argv[1:]:\n"
                    "    if a.endswith('.wav'):\n"
                    "        print(json.dumps({'file': a, 'channels': [{'segments': [{'text': text}]}]}))\n")
        os.chmod(redacting, os.stat(redacting).st_mode | stat.S_IEXEC)
        a = os.path.join(self.tmp, "a.wav")
        write_wav(a, 8000, 800)
        args = argparse.Namespace(engine=redacting, model_dir=self.tmp, set=[])
        hyps, _ = evaluate.engine_transcribe(args, "lexicon", [os.path.realpath(a)])
        self.assertEqual(hyps, {os.path.realpath(a): "my pin is one two"})

    def test_compare_set_decodes_again_and_counts_the_changed_characters(self):
        a, c = (os.path.join(self.tmp, n + ".wav") for n in "ac")
        for p in (a, c):
            write_wav(p, 8000, 800)
        tsv = os.path.join(self.tmp, "cmp.tsv")
        with open(tsv, "w") as f:
            f.write(f"A\tann\tdialogue\t0.1\t{a}\tone two three\ttest\n")
            f.write(f"C\tann\tcutaway\t0.1\t{c}\tone two five six\ttest\n")
        args = argparse.Namespace(engine=self.engine, model_dir=self.tmp, splits="", data=self.tmp,
                                  max_utts=400, manifest=["game=" + tsv], all_asterisk=False,
                                  decoders="lexicon", shift_ms="", set=[],
                                  compare_set=["decoder.lexicon_lm_weight=1.5"])
        report = evaluate.engine_eval(args)
        r = report["compare"]["conditions"]["game/lexicon"]
        # The stand-in adds " weighted" (9 characters) to "one two three" (13) under the override.
        self.assertEqual((r["changed_chars"], r["base_chars"]), (18, 26))
        self.assertAlmostEqual(report["compare"]["changed_share"]["lexicon"], 18 / 26)
        # its own WER: A "one two three weighted" is 1 insertion against 3 words, C "one two five
        # six" gets two substitutions (five -> three, six -> weighted): 3 errors in 7 words.
        self.assertAlmostEqual(r["wer"], 3 / 7)
        self.assertEqual(report["compare"]["set"], ["decoder.lexicon_lm_weight=1.5"])

    def test_a_manifest_adds_its_test_rows_as_a_condition(self):
        a, b, c = (os.path.join(self.tmp, n + ".wav") for n in "abc")
        for p in (a, b, c):
            write_wav(p, 8000, 800)
        tsv = os.path.join(self.tmp, "m.tsv")
        with open(tsv, "w") as f:
            f.write(f"A\tann\tdialogue\t0.1\t{a}\tone two three\ttest\n")
            f.write(f"B\tbob\tdialogue\t0.1\t{b}\tone two three\ttrain\n")   # not evaluated
            f.write(f"C\tann\tcutaway\t0.1\t{c}\tone two five six\ttest\n")
        args = argparse.Namespace(engine=self.engine, model_dir=self.tmp, splits="", data=self.tmp,
                                  max_utts=400, manifest=["game=" + tsv], all_asterisk=False,
                                  decoders="lexicon", shift_ms="", set=[])
        report = evaluate.engine_eval(args)
        r = report["conditions"]["game/lexicon"]
        self.assertEqual(r["utts"], 2)
        # the stand-in says "one two three" for both: 0 errors in A, 2 of 4 words in C.
        self.assertAlmostEqual(r["wer"], 2 / 7)
        self.assertEqual(set(report["conditions"]), {"game/lexicon"})
        # more test rows than --max-utts: a sample of them, not the first ones in file order
        many = os.path.join(self.tmp, "many.tsv")
        with open(many, "w") as f:
            for i in range(200):
                f.write(f"X{i}\tann\tdialogue\t0.1\tx{i:03d}.wav\tone\ttest\n")
        picked = evaluate.manifest_items(many, 20)
        self.assertEqual(len(picked), 20)
        self.assertEqual(len(set(picked)), 20)
        names = sorted(os.path.basename(w) for w, _ in picked)
        self.assertNotEqual(names, [f"x{i:03d}.wav" for i in range(20)])
        self.assertTrue(all(os.path.dirname(w) == os.path.realpath(self.tmp) for w, _ in picked))
        with open(tsv, "a") as f:
            f.write("D\tann\ttoo few columns\n")
        with self.assertRaises(SystemExit):
            evaluate.engine_eval(args)
        only_train = os.path.join(self.tmp, "train.tsv")
        with open(only_train, "w") as f:
            f.write(f"B\tbob\tdialogue\t0.1\t{b}\tone two three\ttrain\n")
        with self.assertRaises(SystemExit):
            evaluate.manifest_items(only_train, 400)

    def test_sox_pads_in_the_files_own_rate(self):
        src, dst = os.path.join(self.tmp, "s.wav"), os.path.join(self.tmp, "d.wav")
        write_wav(src, 8000, 800)
        evaluate.shifted_copy(src, dst, 2.5)
        with wave.open(dst) as w:
            self.assertEqual(w.getframerate(), 8000)
            self.assertEqual(w.getnframes(), 820)
            head = w.readframes(21)
        self.assertEqual(head[:40], bytes(40))
        self.assertNotEqual(head[40:42], bytes(2))


# Prints `sluice transcribe --format json` documents whose segments list alternatives when the
# command asks for them (--decoder.alternatives=N): two segments, "one two" read first and "one
# too" second, then "three" first and "four" second. Without the option, no alternatives.
FAKE_NBEST_ENGINE = r'''#!/usr/bin/python3
import json, sys
files = [a for a in sys.argv[1:] if a.endswith(".wav")]
n = next((int(a.split("=")[1]) for a in sys.argv if a.startswith("--decoder.alternatives=")), 0)
assert "--postproc.redact=false" in sys.argv
for f in files:
    segs = [{"text": "one two", "alternatives": [{"text": "one two", "confidence": 0.7},
                                                 {"text": "one too", "confidence": 0.3}][:n]},
            {"text": "three", "alternatives": [{"text": "three", "confidence": 0.6},
                                               {"text": "four", "confidence": 0.4}][:n]},
            {"text": ""}]
    if "/one" in f:
        segs = [{"text": "yes", "alternatives": [{"text": "yes", "confidence": 0.8},
                                                 {"text": "yet", "confidence": 0.2}][:n]}]
    if n == 0:
        for s in segs:
            s.pop("alternatives", None)
    print(json.dumps({"file": f, "channels": [{"segments": segs}]}))
'''


class OracleTest(unittest.TestCase):
    def test_the_oracle_picks_each_segments_nearest_reading(self):
        self.assertEqual(evaluate.oracle_hyp([["a b", "a c"], ["x y", "x z"]], "a c x z"), "a c x z")
        self.assertEqual(evaluate.oracle_hyp([["a b", "a c"], ["x y", "x z"]], "a b x y"), "a b x y")
        self.assertEqual(evaluate.oracle_hyp([["one"]], "two"), "one")  # one reading: it
        # Ties keep the earlier (better ranked) reading.
        self.assertEqual(evaluate.oracle_hyp([["p", "q"]], "r"), "p")

    def test_oracle_eval_scores_the_best_reading_of_each_segment(self):
        tmp = tempfile.mkdtemp(prefix="sluice-oracle-test-")
        try:
            engine = os.path.join(tmp, "fake_sluice")
            with open(engine, "w") as f:
                f.write(FAKE_NBEST_ENGINE)
            os.chmod(engine, os.stat(engine).st_mode | stat.S_IEXEC)
            a = os.path.join(tmp, "a.wav")
            write_wav(a, 8000, 800)
            wav = os.path.realpath(a)
            args = argparse.Namespace(engine=engine, model_dir=tmp, decoders="lexicon", set=[])
            # Reference "one too four": the best readings ("one two three") get 2 of 3 words wrong;
            # the second readings of both segments match it.
            conditions = {"c": [(wav, "one too four")]}
            out = evaluate.oracle_eval(args, conditions, [wav], 2)
            r = out["conditions"]["c/lexicon"]
            self.assertEqual(r["oracle_wer"], 0.0)
            self.assertEqual(r["readings"], 4)
            # One reading per segment: the oracle is the best reading's WER, 2 of 3 words.
            one = evaluate.oracle_eval(args, conditions, [wav], 1)["conditions"]["c/lexicon"]
            self.assertAlmostEqual(one["oracle_wer"], 2 / 3)
            self.assertEqual(one["readings"], 2)
            self.assertNotIn("brier", one)  # two segments: no calibration figures
            # Calibration over one-segment utterances: "yes" right at 0.8, and at 0.8 wrong
            # (reference "yet"): mean confidence 0.8, half right, Brier (0.2^2 + 0.8^2) / 2.
            b = os.path.join(tmp, "one.wav")
            c = os.path.join(tmp, "one_other.wav")
            write_wav(b, 8000, 800)
            write_wav(c, 8000, 800)
            cal = evaluate.oracle_eval(args, {"c": [(os.path.realpath(b), "yes"), (os.path.realpath(c), "yet")]},
                                       [os.path.realpath(b), os.path.realpath(c)], 2)["conditions"]["c/lexicon"]
            self.assertEqual(cal["one_segment"], 2)
            self.assertAlmostEqual(cal["mean_confidence"], 0.8)
            self.assertAlmostEqual(cal["exactly_right"], 0.5)
            self.assertAlmostEqual(cal["brier"], (0.2 ** 2 + 0.8 ** 2) / 2)
            self.assertEqual(cal["oracle_wer"], 0.0)  # "yet" is the second reading
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
