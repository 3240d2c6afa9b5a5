"""Tests of the n-gram LM builder (build_lm.py).

  /usr/bin/python3 -m unittest discover -s tools/train -p 'test_build_lm.py'

The ARPA files it writes are read back by an independent reader here and scored with backoff; for
every history the probabilities over the vocabulary must sum to 1. The C++ loader reads the
committed tests/data/lm/kn3.arpa (built from tests/data/lm/corpus.txt), which must stay what
build_lm.py makes of that corpus.
"""
from __future__ import annotations

import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import build_lm  # noqa: E402

TEST_CORPUS = os.path.join(ROOT, "tests", "data", "lm", "corpus.txt")
TEST_ARPA = os.path.join(ROOT, "tests", "data", "lm", "kn3.arpa")
SUM_TOLERANCE = 1e-5


def read_arpa(path):
    """{ngram tuple: (log10 prob, log10 backoff)}, order, announced counts."""
    entries, counts, order = {}, {}, 0
    section = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line == "\\data\\":
                section = "data"
            elif line == "\\end\\":
                section = None
            elif line.startswith("\\") and line.endswith("-grams:"):
                section = int(line[1:line.index("-")])
            elif section == "data":
                n, c = line[len("ngram "):].split("=")
                counts[int(n)] = int(c)
                order = max(order, int(n))
            elif isinstance(section, int):
                fields = line.split()
                words = tuple(fields[1:1 + section])
                bo = float(fields[1 + section]) if len(fields) == section + 2 else 0.0
                entries[words] = (float(fields[0]), bo)
    return entries, order, counts


def log10_prob(entries, order, history, word):
    h = tuple(history)[-(order - 1):] if order > 1 else ()
    backoff = 0.0
    while True:
        if h + (word,) in entries:
            return backoff + entries[h + (word,)][0]
        if h in entries:
            backoff += entries[h][1]
        if not h:
            raise KeyError(word)
        h = h[1:]


def corpus_sentences():
    return list(build_lm.read_sentences(TEST_CORPUS))


def vocabulary(entries):
    return sorted(g[0] for g in entries if len(g) == 1 and g[0] != build_lm.BOS)


class DiscountTest(unittest.TestCase):
    def test_chen_goodman_formula(self):
        # Y = 10 / (10 + 2*5) = 0.5; D1 = 1 - 2*0.5*5/10; D2 = 2 - 3*0.5*3/5; D3+ = 3 - 4*0.5*2/3.
        d1, d2, d3 = build_lm.discounts((10, 5, 3, 2))
        self.assertAlmostEqual(d1, 0.5)
        self.assertAlmostEqual(d2, 1.1)
        self.assertAlmostEqual(d3, 3 - 4 / 3)

    def test_fallback_when_counts_are_too_few(self):
        self.assertEqual(build_lm.discounts((3, 0, 0, 0))[1:], build_lm.FALLBACK_DISCOUNTS[1:])
        self.assertEqual(build_lm.discounts((0, 0, 0, 0)), build_lm.FALLBACK_DISCOUNTS)


class CountTest(unittest.TestCase):
    def test_continuation_counts(self):
        # <s> a b </s> twice, <s> b </s> once.
        sents = [["a", "b"], ["b"], ["a", "b"]]
        raw = build_lm.count_ngrams(sents, 3)
        self.assertEqual(raw[2][("b", "</s>")], 3)
        self.assertNotIn(("<s>",), raw[1])
        adj = build_lm.adjusted_counts(raw, 3)
        self.assertEqual(adj[3], raw[3])                # highest order: raw counts
        self.assertEqual(adj[1][("b",)], 2)             # after "a" and after <s>
        self.assertEqual(adj[1][("a",)], 1)             # only after <s>
        self.assertEqual(adj[2][("<s>", "a")], 2)       # starts with <s>: raw count
        self.assertEqual(adj[2][("a", "b")], 1)         # only after <s>


class BuildTest(unittest.TestCase):
    def build(self, sentences, **kw):
        tmp = tempfile.mkdtemp()
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(" ".join(s) for s in sentences) + "\n")
        out = os.path.join(tmp, "lm.arpa")
        build_lm.build(corpus, out, kw.get("order", 3), kw.get("prune", [0, 0, 0]))
        return read_arpa(out)

    def assert_normalised(self, entries, order, histories):
        vocab = vocabulary(entries)
        for h in histories:
            total = sum(10 ** log10_prob(entries, order, h, w) for w in vocab)
            self.assertAlmostEqual(total, 1.0, delta=SUM_TOLERANCE, msg=f"history {h}")

    def every_history(self, entries, order):
        hs = [()] + [g for g in entries if len(g) < order and g[-1] != build_lm.EOS]
        hs += [("never", "seen"), ("<s>", "zzz")]
        return hs

    def test_unpruned_sums_to_one_everywhere(self):
        entries, order, counts = self.build(corpus_sentences())
        self.assertEqual(order, 3)
        for n, c in counts.items():
            self.assertEqual(c, sum(1 for g in entries if len(g) == n))
        self.assert_normalised(entries, order, self.every_history(entries, order))

    def test_pruned_sums_to_one_and_keeps_prefixes_and_suffixes(self):
        sents = corpus_sentences()
        full, _, _ = self.build(sents)
        entries, order, _ = self.build(sents, prune=[0, 1, 1])
        self.assertLess(len(entries), len(full))
        for g in entries:
            if len(g) > 1:
                self.assertIn(g[:-1], entries, f"prefix of {g}")
                self.assertIn(g[1:], entries, f"suffix of {g}")
        self.assert_normalised(entries, order, self.every_history(entries, order))

    def test_unknown_words_and_sentence_marks(self):
        entries, order, _ = self.build([["a", "b"], ["b", "a"]])
        self.assertEqual(entries[("<s>",)][0], build_lm.BOS_LOG10_PROB)
        self.assertIn(("<unk>",), entries)
        self.assertIn(("</s>",), entries)
        # An unseen word costs more than any seen one.
        unk = log10_prob(entries, order, ["a"], "<unk>")
        self.assertLess(unk, log10_prob(entries, order, ["a"], "b"))

    def test_frequent_continuation_beats_rare(self):
        sents = [["call", "me"]] * 5 + [["call", "them"]]
        entries, order, _ = self.build(sents, order=2, prune=[0, 0])
        self.assertGreater(log10_prob(entries, order, ["call"], "me"), log10_prob(entries, order, ["call"], "them"))
        self.assert_normalised(entries, order, [(), ("call",), ("<s>",), ("me",)])

    def test_committed_test_lm_is_up_to_date(self):
        tmp = tempfile.mkdtemp()
        out = os.path.join(tmp, "kn3.arpa")
        self.assertEqual(build_lm.main(["--corpus", TEST_CORPUS, "--out", out]), 0)
        with open(out, encoding="utf-8") as a, open(TEST_ARPA, encoding="utf-8") as b:
            self.assertEqual(a.read(), b.read(), "rebuild tests/data/lm/kn3.arpa with build_lm.py")
        entries, order, _ = read_arpa(out)
        self.assertTrue(any(len(g) == 3 for g in entries))
        self.assert_normalised(entries, order, self.every_history(entries, order))

    def test_bad_arguments(self):
        with self.assertRaises(SystemExit):
            build_lm.main(["--corpus", TEST_CORPUS, "--out", "/dev/null", "--prune", "1,0,0"])


if __name__ == "__main__":
    unittest.main()
