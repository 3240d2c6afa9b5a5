"""Text for the punctuation and casing model: documents → (lowercase words, per-word labels).

A label per word is (capitalize, mark): capitalize = the written word starts with an upper-case
letter; mark = the punctuation written right after it, folded onto the three marks the engine
shows: '.' (also '!', '...', ';' at a sentence end is rare enough to fold to ','), ',' (also ';',
':', ' - '), '?' or none. The input the model sees is what the recognizer prints: lower-case words,
punctuation stripped, hyphenated words split, apostrophes inside words kept.

Sources (all offline, Debian 12 main):
  fortune   /usr/share/games/fortunes (package fortunes, fortunes-min): one entry = one document;
            written English with its own casing and punctuation (quotes, jokes, dialogue).
  asterisk  /usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz: IVR prompts (CC BY-SA),
            one prompt = one document; the call-center register, written with punctuation.
  grammar   tools/train/call_grammar.py: synthetic agent/customer turns with , . ? (lower case);
            casing is restored by rule (sentence starts, 'i', names, places, months, weekdays).

Held-out split by document: a salted SHA-1 of the document's lowercase words decides train / dev /
test, so no sentence of a held-out document is ever trained on, whatever the order or seed.
"""
from __future__ import annotations

import glob
import gzip
import hashlib
import os
import random
import re

FORTUNE_DIR = "/usr/share/games/fortunes"
FORTUNE_SKIP = {"ascii-art", "perl", "translate-me", "art", "zippy"}  # pictures, code, non-English
ASTERISK_TEXT = "/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz"
SPLIT_SALT = "sluice-punct-v1"
DEV_PERCENT, TEST_PERCENT = 5, 5
MIN_DOC_WORDS = 3
MAX_NONWORD_SHARE = 0.2   # an entry with more stray symbols than this is art or code, not text

MARK_NONE, MARK_PERIOD, MARK_COMMA, MARK_QUESTION = 0, 1, 2, 3
MARK_CHARS = ("", ".", ",", "?")

_FOLD = {".": MARK_PERIOD, "!": MARK_PERIOD, "?": MARK_QUESTION,
         ",": MARK_COMMA, ";": MARK_COMMA, ":": MARK_COMMA, "-": MARK_COMMA}
# The strongest mark wins when several follow one word ("?!", "...,", '."').
_STRENGTH = {MARK_NONE: 0, MARK_COMMA: 1, MARK_PERIOD: 2, MARK_QUESTION: 3}

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*")


def split_of(words: list[str]) -> str:
    """'train', 'dev' or 'test' for a document given its lowercase words (stable everywhere)."""
    h = hashlib.sha1((SPLIT_SALT + "|" + " ".join(words)).encode()).digest()
    bucket = int.from_bytes(h[:4], "big") % 100
    if bucket < DEV_PERCENT:
        return "dev"
    if bucket < DEV_PERCENT + TEST_PERCENT:
        return "test"
    return "train"


def label_text(text: str) -> tuple[list[str], list[int], list[int]]:
    """Written text → (lowercase words, capitalize flags, marks). The mark of a word is taken from
    the characters between it and the next word (or the end)."""
    words, caps, marks = [], [], []
    matches = list(_WORD.finditer(text))
    for i, m in enumerate(matches):
        w = m.group(0)
        words.append(w.lower())
        caps.append(1 if w[0].isupper() else 0)
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        gap = text[m.end():end]
        # A hyphen joining two words ("well-known") is not a pause; a dash between spaces is.
        if gap == "-" or gap == "'":
            gap = ""
        mark = MARK_NONE
        for ch in gap:
            folded = _FOLD.get(ch, MARK_NONE)
            if _STRENGTH[folded] > _STRENGTH[mark]:
                mark = folded
        marks.append(mark)
    return words, caps, marks


def _clean_fortune(entry: str) -> str | None:
    lines = []
    for line in entry.splitlines():
        stripped = line.strip()
        # Attributions ("-- Mark Twain") and their continuation lines are not running text.
        if stripped.startswith("--") or stripped.startswith("- "):
            break
        lines.append(stripped)
    text = " ".join(lines)
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return None
    letters = sum(ch.isalpha() or ch.isspace() for ch in text)
    if 1.0 - letters / len(text) > MAX_NONWORD_SHARE:
        return None
    # Speaker tags of dialogue fortunes ("Q:", "A:", "JOHN:") are not speech.
    text = re.sub(r"(^|\s)[A-Z][A-Za-z]{0,10}:\s", r"\1", text)
    return text


def fortune_documents(fortune_dir: str = FORTUNE_DIR) -> list[str]:
    """Cleaned fortune entries (written text), in a stable order."""
    docs = []
    paths = sorted(p for p in glob.glob(os.path.join(fortune_dir, "*"))
                   if os.path.isfile(p) and "." not in os.path.basename(p)
                   and os.path.basename(p) not in FORTUNE_SKIP)
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for entry in f.read().split("\n%\n"):
                text = _clean_fortune(entry)
                if text:
                    docs.append(text)
    return docs


def asterisk_documents(path: str = ASTERISK_TEXT) -> list[str]:
    """The IVR prompt texts (those that are sentences, not single digits or letters)."""
    if not os.path.exists(path):
        return []
    docs = []
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(";") or ":" not in line:
                continue
            text = line.split(":", 1)[1].strip()
            if len(text.split()) >= MIN_DOC_WORDS:
                docs.append(text)
    return docs


def _proper_nouns() -> set[str]:
    import call_grammar as g
    names = set(g.FIRST_NAMES) | set(g.LAST_NAMES) | set(g.MONTHS) | set(g.WEEKDAYS)
    for place in list(g.CITIES) + list(g.STATES):
        names.update(place.split())
    return names


def truecase_grammar(text: str, proper: set[str]) -> str:
    """Casing by rule for the lowercase grammar output: sentence starts, 'i' and its contractions,
    and the grammar's own names, places, months and weekdays."""
    out, start = [], True
    for tok in text.split(" "):
        m = _WORD.match(tok)
        word = m.group(0) if m else ""
        if word and (start or word in proper or word == "i" or word.startswith("i'")):
            tok = tok[0].upper() + tok[1:]
        if word:
            start = tok[-1] in ".?!"
        out.append(tok)
    return " ".join(out)


def grammar_documents(n: int, seed: int) -> list[str]:
    """n synthetic call-center turns (1-3 of the grammar's utterances each), truecased."""
    import call_grammar as g
    rng = random.Random(seed)
    proper = _proper_nouns()
    docs = []
    for _ in range(n):
        turn = " ".join(g.expand(rng) for _ in range(rng.randint(1, 3)))
        docs.append(truecase_grammar(turn, proper))
    return docs


def labelled(docs: list[str], source: str) -> dict[str, list[tuple]]:
    """Documents → {split: [(words, caps, marks, source)]}, skipping very short ones."""
    out: dict[str, list[tuple]] = {"train": [], "dev": [], "test": []}
    for text in docs:
        words, caps, marks = label_text(text)
        if len(words) < MIN_DOC_WORDS:
            continue
        out[split_of(words)].append((words, caps, marks, source))
    return out
