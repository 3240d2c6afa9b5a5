"""Tests of the word-piece output units (pieces.py) and of the recipe with them: tokenizer round
trip, deterministic training, tokens file against model, export of a pieces model, fine-tuning a
chars model dir to pieces, and train.py -> export.py -> evaluate.py with --units pieces.
Needs Debian's python3-sentencepiece (and python3-torch for the model tests); without
sentencepiece the script exits 77, which ctest reports as skipped (not passed); without torch
the model tests are skipped.

  /usr/bin/python3 tools/train/test_pieces.py
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
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
PIECES_DIR = os.path.join(ROOT, "tests", "data", "pieces")
DEFAULT_MODEL = os.path.join(ROOT, "models", "default")
SKIP = 77

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.rstrip("\n")]


def grammar_sentences(n: int, seed: str) -> list[str]:
    import call_grammar
    import text_norm
    rng = random.Random(seed)
    return [text_norm.to_transcript(call_grammar.expand(rng)) for _ in range(n)]


class RoundTripTest(unittest.TestCase):
    def setUp(self):
        import pieces
        self.pieces = pieces
        self.sp = pieces.load(PIECES_DIR)
        self.tokens = read_lines(os.path.join(PIECES_DIR, "tokens.txt"))

    def round_trip(self, text: str) -> list[int]:
        ids = self.pieces.encode(self.sp, text)
        self.assertTrue(ids, text)
        self.assertNotIn(1, ids, f"<unk> in {text!r}")          # token 1 is <unk>
        self.assertNotIn(0, ids)                                 # never the CTC blank
        self.assertEqual(self.pieces.decode(self.tokens, ids), text)
        return ids

    def test_recipe_sentences(self):
        # Grammar sentences (a seed pieces.py does not use) plus fixed call-center phrases.
        texts = grammar_sentences(300, "test-pieces") + [
            "thank you for calling", "what's the billing address",
            "please enter your agent number followed by the pound key"]
        for t in texts:
            self.round_trip(t)
        # Whole common words are single word-start pieces, not spelled letter by letter.
        ids = self.round_trip("thank you for calling")
        self.assertEqual(len(ids), 4, [self.tokens[i] for i in ids])
        self.assertTrue(all(self.tokens[i].startswith("\u2581") for i in ids))

    def test_words_never_seen_are_spelled_from_sub_pieces(self):
        for text in ("zyxquv", "qwertzuiop jkl", "flibbertigibbet's xylophonic quokkas"):
            ids = self.round_trip(text)
            words = text.split()
            # More pieces than words: the made-up words are not single pieces.
            self.assertGreater(len(ids), len(words), text)
            # Exactly one word-start piece per word.
            self.assertEqual(sum(self.tokens[i].startswith("\u2581") for i in ids), len(words))

    def test_decode_drops_unk_and_blank_and_collapses_spaces(self):
        t = self.tokens
        ids = [t.index("\u2581the"), 1, 0, t.index("\u2581"), t.index("\u2581to")]
        self.assertEqual(self.pieces.decode(t, ids), "the to")


class TokensFileTest(unittest.TestCase):
    def test_committed_tokens_match_committed_model(self):
        import pieces
        sp = pieces.load(PIECES_DIR)
        tokens = read_lines(os.path.join(PIECES_DIR, "tokens.txt"))
        self.assertEqual(sp.get_piece_size(), 300)
        self.assertEqual(len(tokens), 301)
        self.assertEqual(tokens[:2], ["<blank>", "<unk>"])
        self.assertNotIn("<space>", tokens)
        for i in range(sp.get_piece_size()):
            self.assertEqual(tokens[i + 1], sp.id_to_piece(i))
        pieces.check_tokens(sp, tokens)      # no exception
        # Every character of the transcript alphabet is a piece of its own.
        for c in "abcdefghijklmnopqrstuvwxyz'":
            self.assertIn(c, tokens)

    @unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed (dataset.py needs it)")
    def test_mismatching_tokens_are_refused(self):
        import dataset
        import pieces
        sp = pieces.load(PIECES_DIR)
        tokens = read_lines(os.path.join(PIECES_DIR, "tokens.txt"))
        swapped = list(tokens)
        swapped[5], swapped[6] = swapped[6], swapped[5]
        for bad in (tokens[:-1], tokens + ["extra"], swapped, ["<blank>", "<space>"] + tokens[2:],
                    tokens[1:]):
            with self.assertRaises(ValueError):
                pieces.check_tokens(sp, bad)
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(os.path.join(PIECES_DIR, "pieces.model"), d)
            with open(os.path.join(d, "tokens.txt"), "w", encoding="utf-8") as f:
                f.write("\n".join(swapped) + "\n")
            with self.assertRaises(ValueError):
                dataset.Units.from_pieces_dir(d)
            shutil.copy(os.path.join(PIECES_DIR, "tokens.txt"), d)
            self.assertEqual(dataset.Units.from_pieces_dir(d).tokens, tokens)


class DeterminismTest(unittest.TestCase):
    def test_same_text_gives_same_model_bytes(self):
        import pieces
        text = grammar_sentences(3000, "determinism")
        a = pieces.train_model(text, vocab_size=120)
        b = pieces.train_model(text, vocab_size=120)
        self.assertEqual(a, b)
        self.assertEqual(pieces.load_bytes(a).get_piece_size(), 120)
        # Other text gives another model (the comparison above can tell models apart).
        c = pieces.train_model(grammar_sentences(3000, "other"), vocab_size=120)
        self.assertNotEqual(a, c)

    def test_training_text_is_fixed_and_train_split_only(self):
        import corpus
        import pieces
        a = pieces.training_text(grammar_sentences=3000, seed=1, with_asterisk=False)
        b = pieces.training_text(grammar_sentences=3000, seed=1, with_asterisk=False)
        self.assertEqual(a, b)
        self.assertGreater(len(a), 3000)          # fortunes as well as grammar sentences
        held = [s for s in a if corpus.holdout_split(s) != "train"]
        self.assertEqual(held, [])

    def test_cli_writes_model_and_matching_tokens(self):
        import pieces
        with tempfile.TemporaryDirectory() as d:
            text = grammar_sentences(2000, "cli")
            pieces.write_dir(d, pieces.train_model(text, vocab_size=100))
            sp = pieces.load(d)
            tokens = read_lines(os.path.join(d, "tokens.txt"))
            self.assertEqual(len(tokens), 101)
            pieces.check_tokens(sp, tokens)


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class GreedyDecodeTest(unittest.TestCase):
    def test_pieces_best_path(self):
        import torch
        import ctc_metrics
        import dataset
        units = dataset.Units.from_pieces_dir(PIECES_DIR)
        t = units.tokens
        path = [t.index("\u2581thank"), t.index("\u2581thank"), 0, t.index("\u2581you"), 0, 0,
                t.index("\u2581for"), t.index("\u2581for")]
        logits = torch.full((1, len(path), len(t)), -5.0)
        for f, i in enumerate(path):
            logits[0, f, i] = 5.0
        self.assertEqual(ctc_metrics.greedy_decode(logits, torch.tensor([len(path)]), units), ["thank you for"])
        y = torch.tensor([units.encode("thank you for calling")])
        self.assertEqual(ctc_metrics.targets_to_text(y, torch.tensor([y.shape[1]]), units),
                         ["thank you for calling"])


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class ExportTest(unittest.TestCase):
    def export_tiny(self, out: str, *extra: str) -> dict:
        subprocess.run([sys.executable, os.path.join(HERE, "export.py"), "--random-tiny", "--out", out,
                        "--golden-synthetic", "1", *extra], check=True, capture_output=True)
        with open(os.path.join(out, "model.json")) as f:
            return json.load(f)

    def test_tiny_pieces_model_dir(self):
        import safetensors_io
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m")
            meta = self.export_tiny(out, "--pieces", PIECES_DIR)
            self.assertEqual(meta["units"], "pieces")
            self.assertEqual(meta["tokenizer"], "pieces.model")
            self.assertNotIn("space_token", meta)
            self.assertEqual(meta["architecture"]["vocab_size"], 301)
            with open(os.path.join(out, "pieces.model"), "rb") as a, \
                    open(os.path.join(PIECES_DIR, "pieces.model"), "rb") as b:
                self.assertEqual(a.read(), b.read())
            self.assertEqual(read_lines(os.path.join(out, "tokens.txt")),
                             read_lines(os.path.join(PIECES_DIR, "tokens.txt")))
            g = safetensors_io.load(os.path.join(out, "golden", "synthetic0.safetensors"))
            self.assertEqual(g["logits"].shape[1], 301)
            # Re-exporting the directory keeps the pieces files and keys.
            out2 = os.path.join(d, "m2")
            subprocess.run([sys.executable, os.path.join(HERE, "export.py"), "--model-dir", out,
                            "--out", out2], check=True, capture_output=True)
            with open(os.path.join(out2, "model.json")) as f:
                meta2 = json.load(f)
            self.assertEqual((meta2["units"], meta2["tokenizer"]), ("pieces", "pieces.model"))
            self.assertTrue(os.path.exists(os.path.join(out2, "pieces.model")))

    def test_tiny_chars_model_dir(self):
        with tempfile.TemporaryDirectory() as d:
            meta = self.export_tiny(d)
            self.assertEqual(meta["units"], "chars")
            self.assertEqual(meta["space_token"], "<space>")
            self.assertNotIn("tokenizer", meta)
            self.assertFalse(os.path.exists(os.path.join(d, "pieces.model")))


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class FineTuneToPiecesTest(unittest.TestCase):
    def test_chars_model_dir_loads_with_a_fresh_pieces_head(self):
        import safetensors_io
        from train import load_model_dir
        tokens = read_lines(os.path.join(PIECES_DIR, "tokens.txt"))
        with self.assertRaises(ValueError):
            load_model_dir(DEFAULT_MODEL, tokens)      # without new_head: refused
        model = load_model_dir(DEFAULT_MODEL, tokens, new_head=True)
        self.assertEqual(model.cfg.vocab_size, 301)
        saved = safetensors_io.load(os.path.join(DEFAULT_MODEL, "weights.safetensors"))
        state = model.state_dict()
        self.assertEqual(set(state), set(saved))
        for k, v in saved.items():
            if k.startswith("ctc."):
                self.assertEqual(state[k].shape[0], 301, k)
            else:
                self.assertTrue(bool((state[k] == v.float()).all()), k)


    def test_pieces_head_started_from_the_characters_layer(self):
        import torch
        import safetensors_io
        from train import load_model_dir
        tokens = read_lines(os.path.join(PIECES_DIR, "tokens.txt"))
        chars = read_lines(os.path.join(DEFAULT_MODEL, "tokens.txt"))
        saved = safetensors_io.load(os.path.join(DEFAULT_MODEL, "weights.safetensors"))
        w, b = saved["ctc.weight"].float(), saved["ctc.bias"].float()
        model = load_model_dir(DEFAULT_MODEL, tokens, new_head=True, head_init="chars")
        got_w, got_b = model.ctc.weight.detach(), model.ctc.bias.detach()
        self.assertTrue(torch.equal(got_w[0], w[0]))      # <blank> keeps its row
        for piece, letters in (("\u2581the", ["<space>", "t", "h", "e"]), ("ing", ["i", "n", "g"]),
                               ("'", ["'"])):
            i, ids = tokens.index(piece), [chars.index(c) for c in letters]
            self.assertTrue(torch.allclose(got_w[i], w[ids].mean(0)), piece)
            self.assertTrue(torch.allclose(got_b[i], b[ids].mean(0)), piece)


def write_tiny_data(root: str, texts: list[str], seed: int) -> None:
    """make_data.py's shard layout with random features: splits train, dev, test_unseen."""
    import numpy as np
    rng = np.random.default_rng(seed)
    for split in ("train", "dev", "test_unseen"):
        os.makedirs(os.path.join(root, "shards", split))
        os.makedirs(os.path.join(root, "feats", split), exist_ok=True)
        feats, utts, off = [], [], 0
        for i, text in enumerate(texts):
            n = 120 + 40 * i
            feats.append((rng.standard_normal((n, 80)) * 2 + 8).astype(np.float32))
            utts.append({"id": f"{split}-{i}", "text": text, "duration": n / 100, "condition": "clean",
                         "voice": "v", "feats": {"path": f"feats/{split}/00000.npy", "offset": off, "frames": n}})
            off += n
        np.save(os.path.join(root, "feats", split, "00000.npy"), np.concatenate(feats))
        with open(os.path.join(root, "shards", split, "00000.json"), "w") as f:
            json.dump({"utts": utts}, f)


@unittest.skipUnless(HAVE_TORCH, "python3-torch is not installed")
class TrainExportEvaluateTest(unittest.TestCase):
    def test_pieces_run_end_to_end(self):
        import torch
        texts = ["thank you for calling", "what's the billing address", "zyxquv please hold",
                 "my package never arrived"]
        with tempfile.TemporaryDirectory() as d:
            data, run, out = (os.path.join(d, x) for x in ("data", "run", "model"))
            write_tiny_data(data, texts, 1)
            env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
            r = subprocess.run([sys.executable, os.path.join(HERE, "train.py"), "--data", data, "--out", run,
                                "--units", "pieces", "--pieces", PIECES_DIR, "--init", DEFAULT_MODEL,
                                "--epochs", "1", "--batch-frames", "250", "--threads", "1", "--warmup", "2"],
                               check=True, capture_output=True, text=True, env=env)
            self.assertIn("except the CTC output layer", r.stdout)
            ck = torch.load(os.path.join(run, "last.pt"))
            self.assertEqual(ck["units"], "pieces")
            self.assertEqual(ck["state"]["step"], 4)          # one utterance per batch
            with open(os.path.join(PIECES_DIR, "pieces.model"), "rb") as f:
                self.assertEqual(ck["pieces_model"], f.read())
            self.assertEqual(ck["tokens"], read_lines(os.path.join(PIECES_DIR, "tokens.txt")))
            subprocess.run([sys.executable, os.path.join(HERE, "export.py"), "--ckpt", os.path.join(run, "last.pt"),
                            "--out", out], check=True, capture_output=True)
            with open(os.path.join(out, "model.json")) as f:
                meta = json.load(f)
            self.assertEqual((meta["units"], meta["tokenizer"]), ("pieces", "pieces.model"))
            rep = os.path.join(d, "eval.json")
            subprocess.run([sys.executable, os.path.join(HERE, "evaluate.py"), "--model-dir", out, "--data", data,
                            "--splits", "test_unseen", "--threads", "1", "--json", rep],
                           check=True, capture_output=True, env=env)
            with open(rep) as f:
                report = json.load(f)
            self.assertEqual(report["units"], "pieces")
            self.assertEqual(report["conditions"]["test_unseen"]["utts"], 4)
            # The references are decoded from piece ids: they must be the transcripts themselves.
            self.assertEqual(report["conditions"]["test_unseen"]["samples"][0]["ref"], texts[0])


if __name__ == "__main__":
    try:
        import sentencepiece  # noqa: F401
    except ImportError:
        print("SKIPPED: python3-sentencepiece is not installed (tools/setup.sh --train)")
        sys.exit(SKIP)
    unittest.main()
