#!/usr/bin/python3
"""Word-piece output units: a SentencePiece unigram vocabulary trained from the recipe's text.

  /usr/bin/python3 tools/train/pieces.py --out data/pieces --vocab-size 300

Writes OUT/pieces.model (the SentencePiece model proto) and OUT/tokens.txt: line 0 '<blank>',
then line i+1 = the model's piece i for every SentencePiece id i, so a CTC token id is the
SentencePiece id + 1 (line 1 is '<unk>'). Word-start pieces begin with U+2581 as SentencePiece
writes them; there is no '<space>' token. The engine loads both files from a model directory
and refuses a tokens.txt whose lines 1.. differ from the model's pieces.

Training text (never a dev or test sentence, see corpus.holdout_split): every train-split
fortune sentence, --grammar-sentences call_grammar sentences drawn with --seed and kept only
when their transcript is a train sentence, and the training prompt sets of the asterisk prompts
(real_data.py), all as transcripts (text_norm.to_transcript). Options: unigram, unk_id 0, no
BOS/EOS/PAD, character coverage 1.0 (every letter and the apostrophe is a piece, so any
transcript can be spelled), identity normalisation, whole input in file order, one thread:
the same text and options give the same bytes.
"""
from __future__ import annotations

import argparse
import io
import os
import random
import sys

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BLANK = "<blank>"
WORD_START = "\u2581"
MODEL_FILE = "pieces.model"
TOKENS_FILE = "tokens.txt"


def training_text(grammar_sentences: int = 20000, seed: int = 1,
                  with_asterisk: bool = True) -> list[str]:
    """The recipe's train-split transcripts, one sentence per entry, in a fixed order."""
    import call_grammar
    import corpus
    import text_norm
    fortunes = corpus.SentenceSource(corpus.load_fortune_sentences(), "train").fortunes
    lines = [text_norm.to_transcript(s) for s in fortunes]
    rng = random.Random(f"pieces/{seed}")
    grammar = []
    while len(grammar) < grammar_sentences:
        tr = text_norm.to_transcript(call_grammar.expand(rng))
        if corpus.holdout_split(tr) == "train":
            grammar.append(tr)
    lines += grammar
    if with_asterisk:
        import real_data
        prompts = real_data.asterisk_prompts()
        held = real_data.test_sets(prompts)
        lines += [text for name, _, text in prompts if real_data.prompt_set(name) not in held]
    return [line for line in lines if line.strip()]


def train_model(sentences: list[str], vocab_size: int = 300) -> bytes:
    """A serialised SentencePiece unigram model trained on `sentences`."""
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=buf,
        model_type="unigram", vocab_size=vocab_size,
        unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1,
        character_coverage=1.0, normalization_rule_name="identity",
        add_dummy_prefix=True, split_by_whitespace=True,
        input_sentence_size=0, shuffle_input_sentence=False, num_threads=1,
        minloglevel=2)
    return buf.getvalue()


def tokens_for(sp: spm.SentencePieceProcessor) -> list[str]:
    """The tokens file's lines for a model: '<blank>' then every piece in id order."""
    return [BLANK] + [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def write_dir(out: str, model_bytes: bytes) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, MODEL_FILE), "wb") as f:
        f.write(model_bytes)
    with open(os.path.join(out, TOKENS_FILE), "w", encoding="utf-8") as f:
        for t in tokens_for(load_bytes(model_bytes)):
            f.write(t + "\n")


def load_bytes(model_bytes: bytes) -> spm.SentencePieceProcessor:
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(model_bytes)
    return sp


def load(path: str) -> spm.SentencePieceProcessor:
    """A model from a pieces.model file, or from a directory holding one."""
    if os.path.isdir(path):
        path = os.path.join(path, MODEL_FILE)
    with open(path, "rb") as f:
        return load_bytes(f.read())


def check_tokens(sp: spm.SentencePieceProcessor, tokens: list[str]) -> None:
    """Raises ValueError unless `tokens` is exactly tokens_for(sp)."""
    want = tokens_for(sp)
    if tokens != want:
        bad = next((i for i, (a, b) in enumerate(zip(tokens, want)) if a != b),
                   min(len(tokens), len(want)))
        raise ValueError(f"tokens file does not match the pieces model: {len(tokens)} lines vs "
                         f"{len(want)}, first difference at line {bad}")


def encode(sp: spm.SentencePieceProcessor, text: str) -> list[int]:
    """CTC token ids (SentencePiece id + 1) of a transcript."""
    return [i + 1 for i in sp.encode(text, out_type=int)]


def decode(tokens: list[str], ids) -> str:
    """Text of CTC token ids: pieces joined, U+2581 as a space, '<unk>' and '<blank>' dropped,
    spaces collapsed and stripped."""
    text = "".join(tokens[i] for i in ids if tokens[i] not in (BLANK, "<unk>"))
    return " ".join(text.replace(WORD_START, " ").split())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for pieces.model and tokens.txt")
    ap.add_argument("--vocab-size", type=int, default=300)
    ap.add_argument("--grammar-sentences", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-asterisk", action="store_true",
                    help="leave out the asterisk prompts' training text")
    args = ap.parse_args(argv)
    text = training_text(args.grammar_sentences, args.seed, not args.no_asterisk)
    write_dir(args.out, train_model(text, args.vocab_size))
    sp = load(args.out)
    print(f"pieces: {sp.get_piece_size()} pieces from {len(text)} sentences -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
