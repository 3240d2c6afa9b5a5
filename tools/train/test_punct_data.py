"""Unit tests of the punctuation model's labels and split (stdlib only; expected values by hand)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import punct_data as pd  # noqa: E402

N, P, C, Q = pd.MARK_NONE, pd.MARK_PERIOD, pd.MARK_COMMA, pd.MARK_QUESTION


class LabelText(unittest.TestCase):
    def test_marks_and_casing(self):
        words, caps, marks = pd.label_text('Hello, Mr. Smith! Is it "well-known"? Yes; it is...')
        self.assertEqual(words, ["hello", "mr", "smith", "is", "it", "well", "known", "yes", "it", "is"])
        self.assertEqual(caps, [1, 1, 1, 1, 0, 0, 0, 1, 0, 0])
        self.assertEqual(marks, [C, P, P, N, N, N, Q, C, N, P])

    def test_apostrophes_stay_inside_words(self):
        words, _, marks = pd.label_text("I can't, won't or shan't.")
        self.assertEqual(words, ["i", "can't", "won't", "or", "shan't"])
        self.assertEqual(marks, [N, C, N, N, P])

    def test_strongest_mark_wins_and_dash_is_a_comma(self):
        self.assertEqual(pd.label_text("What?! no - never")[2], [Q, C, N])


class Truecase(unittest.TestCase):
    def test_rules(self):
        got = pd.truecase_grammar("hi, i'm mary from boston. is it monday? yes.", {"mary", "boston", "monday"})
        self.assertEqual(got, "Hi, I'm Mary from Boston. Is it Monday? Yes.")


class Split(unittest.TestCase):
    def test_stable_and_roughly_proportional(self):
        self.assertEqual(pd.split_of(["a", "b"]), pd.split_of(["a", "b"]))
        splits = [pd.split_of([str(i), "x"]) for i in range(4000)]
        held = sum(s != "train" for s in splits) / len(splits)
        self.assertGreater(held, 0.07)
        self.assertLess(held, 0.13)


if __name__ == "__main__":
    unittest.main()
