"""Sentence sources and the sentence-level hold-out.

Two sources: the call-center grammar (call_grammar.expand) and general English from the Debian
fortune files (cleaned, normalised, every word a dictionary word, 4..24 words).

Hold-out by sentence: a sentence's split is a pure function of its transcript (a salted SHA-1
bucket), so a dev/test sentence can never be drawn for train, whatever the seed, the number of
hours or the order of generation; sentences of fewer than MIN_HELDOUT_WORDS words always belong
to train (short stock phrases such as 'thank you for holding' must be learnt).
"""
from __future__ import annotations

import glob
import hashlib
import os
import random
import re

import call_grammar
import text_norm

FORTUNE_DIR = "/usr/share/games/fortunes"
FORTUNE_SKIP = {"ascii-art", "perl", "translate-me"}   # pictures, code, non-English
MIN_WORDS, MAX_WORDS = 4, 24
MAX_CHARS = 160
MIN_HELDOUT_WORDS = 5
HOLDOUT_SALT = "sluice-holdout-v1"
DEV_PER_MILLE, TEST_PER_MILLE = 25, 25


def holdout_split(transcript: str) -> str:
    """'train', 'dev' or 'test' for a transcript (stable across runs and machines)."""
    if len(transcript.split()) < MIN_HELDOUT_WORDS:
        return "train"
    h = hashlib.sha1((HOLDOUT_SALT + "|" + transcript).encode()).digest()
    bucket = int.from_bytes(h[:4], "big") % 1000
    if bucket < DEV_PER_MILLE:
        return "dev"
    if bucket < DEV_PER_MILLE + TEST_PER_MILLE:
        return "test"
    return "train"


def _fortune_entries(path: str):
    with open(path, encoding="utf-8", errors="ignore") as f:
        entry = []
        for line in f:
            if line.strip() == "%":
                if entry:
                    yield entry
                entry = []
            else:
                entry.append(line.rstrip("\n"))
        if entry:
            yield entry


def _entry_text(lines: list[str]) -> str | None:
    kept = []
    for line in lines:
        s = line.strip()
        # Attributions ("-- Mark Twain") and signatures end the prose.
        if re.match(r"^(--|\u2014|~~)", s):
            break
        kept.append(s)
    text = " ".join(kept)
    text = re.sub(r"\s--\s.*$", "", text)
    if not text:
        return None
    letters = sum(c.isalpha() for c in text)
    if letters < 0.6 * len(text.replace(" ", "")):
        return None   # code, tables, pictures
    return text


def load_fortune_sentences(fortune_dir: str = FORTUNE_DIR) -> list[str]:
    """Cleaned fortune sentences as tts text, deduplicated by transcript, sorted (so the list is
    the same on every machine with the same packages)."""
    dictionary = text_norm.load_dictionary()
    seen = {}
    files = sorted(p for p in glob.glob(os.path.join(fortune_dir, "*"))
                   if os.path.isfile(p) and "." not in os.path.basename(p)
                   and os.path.basename(p) not in FORTUNE_SKIP)
    for path in files:
        for entry in _fortune_entries(path):
            text = _entry_text(entry)
            if not text:
                continue
            for sent in re.split(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z])", text):
                sent = sent.strip()
                if not sent or len(sent) > 2 * MAX_CHARS:
                    continue
                try:
                    tts = text_norm.normalize(sent, keep_punct=True)
                except text_norm.Rejected:
                    continue
                tts = tts.lstrip(",.?! ").rstrip(", ")
                if tts and tts[-1] not in ".?!":
                    tts += "."
                tr = text_norm.to_transcript(tts)
                words = tr.split()
                if not (MIN_WORDS <= len(words) <= MAX_WORDS) or len(tr) > MAX_CHARS:
                    continue
                if not all(w in dictionary for w in words):
                    continue
                seen.setdefault(tr, tts)
    return [seen[k] for k in sorted(seen)]


class SentenceSource:
    """Draws (tts_text, transcript, source) for one split: grammar sentences with probability
    p_grammar, else fortune sentences of that split. Grammar sentences of another split are
    redrawn, so the hold-out also covers the (unbounded) grammar output."""

    def __init__(self, fortunes: list[str], split: str, p_grammar: float = 0.7):
        assert split in ("train", "dev", "test")
        self.split = split
        self.p_grammar = p_grammar
        self.fortunes = [s for s in fortunes if holdout_split(text_norm.to_transcript(s)) == split]
        if not self.fortunes:
            raise RuntimeError(f"no fortune sentences for split {split}: is 'fortunes' installed?")

    def draw(self, rng: random.Random) -> tuple[str, str, str]:
        if rng.random() < self.p_grammar:
            for _ in range(100000):
                tts = call_grammar.expand(rng)
                tr = text_norm.to_transcript(tts)
                if holdout_split(tr) == self.split:
                    return tts, tr, "grammar"
            raise RuntimeError("grammar yields no sentence for split " + self.split)
        tts = rng.choice(self.fortunes)
        return tts, text_norm.to_transcript(tts), "fortune"
