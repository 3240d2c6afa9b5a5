"""Text normalisation to the character vocabulary of the default English CTC model.

Vocabulary (tools/train/tokens.txt): <blank>, a..z, apostrophe, <space>.

Every sentence exists in two forms:
  tts text   - lowercase words plus the prosody marks , . ? ! (what a TTS engine is given, so
               that commas give pauses and questions rise);
  transcript - the same words with the marks removed: only a-z, ' and single spaces.
The TTS engines are fed the already normalised words, so what they say is what the transcript
says (numbers are spelled out before synthesis, never by the engine).
"""
from __future__ import annotations

import os
import re
import unicodedata

TOKENS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokens.txt")
SPACE_TOKEN = "<space>"
BLANK_TOKEN = "<blank>"
SYMBOLS = list("abcdefghijklmnopqrstuvwxyz") + ["'", " "]
PROSODY_MARKS = ",.?!"

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
         "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((10**9, "billion"), (10**6, "million"), (1000, "thousand"))
_ORD_IRREGULAR = {"one": "first", "two": "second", "three": "third", "five": "fifth",
                  "eight": "eighth", "nine": "ninth", "twelve": "twelfth"}


def load_tokens(path: str = TOKENS_FILE) -> list[str]:
    """Token list, id = line index. '<space>' stands for the space character."""
    with open(path, encoding="utf-8") as f:
        toks = [line.rstrip("\n") for line in f if line.rstrip("\n")]
    return [" " if t == SPACE_TOKEN else t for t in toks]


def write_tokens(path: str = TOKENS_FILE) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(BLANK_TOKEN + "\n")
        for s in SYMBOLS:
            f.write((SPACE_TOKEN if s == " " else s) + "\n")


def text_to_ids(text: str, tokens: list[str]) -> list[int]:
    index = {t: i for i, t in enumerate(tokens)}
    return [index[c] for c in text]


# ---------------------------------------------------------------- numbers as words

def cardinal(n: int, use_and: bool = False) -> str:
    """0 <= n < 10**12 as words: 1234 -> 'one thousand two hundred thirty four'."""
    if n < 0:
        return "minus " + cardinal(-n, use_and)
    if n < 20:
        return _ONES[n]
    if n < 100:
        t, o = divmod(n, 10)
        return _TENS[t] + ("" if o == 0 else " " + _ONES[o])
    if n < 1000:
        h, r = divmod(n, 100)
        head = _ONES[h] + " hundred"
        if r == 0:
            return head
        return head + (" and " if use_and else " ") + cardinal(r)
    for value, name in _SCALES:
        if n >= value:
            q, r = divmod(n, value)
            head = cardinal(q, use_and) + " " + name
            if r == 0:
                return head
            if r < 100 and use_and:
                return head + " and " + cardinal(r)
            return head + " " + cardinal(r, use_and)
    raise ValueError(n)


def ordinal(n: int) -> str:
    """1 -> 'first', 23 -> 'twenty third', 100 -> 'one hundredth'."""
    words = cardinal(n).split()
    last = words[-1]
    if last in _ORD_IRREGULAR:
        last = _ORD_IRREGULAR[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last = last + "th"
    return " ".join(words[:-1] + [last])


def year(n: int) -> str:
    """Years as people say them: 1984 'nineteen eighty four', 2005 'two thousand five',
    2024 'twenty twenty four', 1900 'nineteen hundred'."""
    if 2000 <= n <= 2009:
        return cardinal(n)
    if 1100 <= n <= 2099:
        hi, lo = divmod(n, 100)
        if lo == 0:
            return cardinal(hi) + " hundred"
        if lo < 10:
            return cardinal(hi) + " oh " + _ONES[lo]
        return cardinal(hi) + " " + cardinal(lo)
    return cardinal(n)


def digit_words(digits: str, zero: str = "zero") -> list[str]:
    return [zero if d == "0" else _ONES[int(d)] for d in digits]


# ---------------------------------------------------------------- free text (fortunes)

_ABBREV = {"mr": "mister", "mrs": "missus", "dr": "doctor", "vs": "versus", "etc": "et cetera",
           "st": None, "jr": None, "sr": None, "eg": None, "ie": None, "prof": None,
           "gen": None, "col": None, "lt": None, "sgt": None, "capt": None, "rev": None,
           "inc": None, "ltd": None, "co": None, "corp": None, "ft": None, "mt": None,
           "ave": None, "pp": None}
_MONEY_RE = re.compile(r"\$(\d[\d,]*)(?:\.(\d\d))?")
_ORDINAL_RE = re.compile(r"\b(\d+)(st|nd|rd|th)\b", re.I)
_DECIMAL_RE = re.compile(r"\b(\d+)\.(\d+)\b")
_NUMBER_RE = re.compile(r"\b\d+\b")
_PERCENT_RE = re.compile(r"(\d)\s*%")


class Rejected(ValueError):
    """The text cannot be normalised without guessing how it is read aloud."""


def _money_words(m: re.Match) -> str:
    dollars = int(m.group(1).replace(",", ""))
    cents = int(m.group(2)) if m.group(2) else 0
    out = cardinal(dollars) + (" dollar" if dollars == 1 else " dollars")
    if cents:
        out += " and " + cardinal(cents) + (" cent" if cents == 1 else " cents")
    return " " + out + " "


def _number_words(m: re.Match) -> str:
    s = m.group(0)
    n = int(s)
    if len(s) > 1 and s.startswith("0"):
        return " " + " ".join(digit_words(s, "oh")) + " "
    if len(s) == 4 and 1100 <= n <= 2099:
        return " " + year(n) + " "
    if n >= 10**12:
        raise Rejected("number too long")
    return " " + cardinal(n) + " "


def normalize(text: str, keep_punct: bool = True) -> str:
    """Free English text -> tts text (keep_punct) or transcript. Raises Rejected when a token
    has no safe reading (abbreviations like 'St.', stray symbols inside words)."""
    t = unicodedata.normalize("NFKD", text)
    t = "".join(c for c in t if not unicodedata.combining(c))
    t = (t.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
          .replace("\u201c", '"').replace("\u201d", '"').replace("\u2014", " , ")
          .replace("\u2013", " "))
    t = t.encode("ascii", "ignore").decode("ascii")
    t = re.sub(r"[/\\()\[\]{}<>|_*~^\"#]", " ", t)
    t = _MONEY_RE.sub(_money_words, t)
    t = _PERCENT_RE.sub(r"\1 percent", t)
    t = t.replace("&", " and ").replace("@", " at ").replace("+", " plus ").replace("=", " equals ")
    t = re.sub(r"(\d),(\d{3})", r"\1\2", t)
    t = re.sub(r"(\d),(\d{3})", r"\1\2", t)
    t = _ORDINAL_RE.sub(lambda m: " " + ordinal(int(m.group(1))) + " ", t)
    t = _DECIMAL_RE.sub(lambda m: " " + cardinal(int(m.group(1))) + " point "
                        + " ".join(digit_words(m.group(2))) + " ", t)
    t = _NUMBER_RE.sub(_number_words, t)
    if re.search(r"\d", t):
        raise Rejected("digits left")
    t = t.lower()
    words = []
    for raw in re.split(r"\s+", t):
        if not raw:
            continue
        # Split off leading/trailing punctuation; keep inner apostrophes and hyphens.
        m = re.fullmatch(r"([^a-z']*)([a-z'][a-z'\-.]*[a-z']|[a-z'])?([^a-z']*)", raw)
        if m is None:
            raise Rejected("odd token " + raw)
        core, tail = m.group(2) or "", m.group(3)
        if not core:
            if any(c in PROSODY_MARKS + ";:" for c in raw) and words:
                words[-1] = _attach(words[-1], raw)
            continue
        if core.endswith(".") or "." in core:
            parts = core.split(".")
            if len(parts) > 1 and all(len(p) == 1 for p in parts if p):
                raise Rejected("initials " + core)
            if core.rstrip(".") in _ABBREV:
                pass
            else:
                raise Rejected("dotted " + core)
            tail = "." + tail
            core = core.rstrip(".")
        if core in _ABBREV and ("." in tail or core in ("mr", "mrs", "dr")):
            exp = _ABBREV[core]
            if exp is None:
                raise Rejected("abbreviation " + core)
            core = exp
            tail = tail.replace(".", "", 1)
        for piece in core.replace("-", " ").split():
            piece = piece.strip("'")
            if piece:
                words.append(piece)
        if tail and words:
            words[-1] = _attach(words[-1], tail)
    out = " ".join(words)
    if not keep_punct:
        out = to_transcript(out)
    return out


def _attach(word: str, punct: str) -> str:
    """Keep at most one prosody mark after a word: ; and : act as commas."""
    mark = ""
    for c in punct:
        if c in "?!":
            mark = c
        elif c == "." and mark not in ("?", "!"):
            mark = "."
        elif c in ",;:" and not mark:
            mark = ","
    return word.rstrip(PROSODY_MARKS) + mark if mark else word


def to_transcript(tts_text: str) -> str:
    """Drop prosody marks, keep a-z, apostrophe and single spaces."""
    t = re.sub(r"[^a-z' ]", " ", tts_text.lower())
    t = " ".join(w.strip("'") for w in t.split())
    return " ".join(w for w in t.split() if w)


# Marks in a recording's written text whose spoken form the text does not give: notes and sounds
# in brackets ("(sigh)", "[beep tone]", "<gulp>"), key symbols (* is "star", # "pound" or "hash"),
# a game's cursing ("@@", "&#($!!") or an "&" (and, n, ampersand).
UNSAID_MARKS = "()[]<>{}*#@&"


def has_unsaid_marks(written: str) -> bool:
    return any(c in written for c in UNSAID_MARKS)


def spoken_transcript(written: str) -> str:
    """The transcript of a recording from the text it was read from (asterisk prompts): as
    to_transcript(), but a digit 1-9 standing alone is the word that was said ("Press 1 to mute"
    -> "press one to mute"; to_transcript() alone drops it, which made labels and references
    miss words the speaker says). Raises Rejected where the text does not tell what was said:
    a note in parentheses ("IAX (note: does not say "2")"), a 0 (zero or oh), a number of two or
    more digits (nine one one or nine hundred eleven), a digit inside a token (3D, H.323), a
    sound described in brackets ("[this is a simple beep tone]", "<beep>"), a key symbol (* is
    "star", # "pound" or "hash": to_transcript() would drop them too), an @ or & (games' cursing,
    "AT&T"), a web address (its "dot"s are said)."""
    if has_unsaid_marks(written):
        raise Rejected("the text does not give what is said for one of " + UNSAID_MARKS)
    if re.search(r"www\.|://|\.(com|org|net)\b", written, re.IGNORECASE):
        raise Rejected("a web address")
    for tok in written.split():
        core = tok.strip(".,;:!?\"'")
        if re.search(r"[0-9]", core) and not re.fullmatch(r"[1-9]", core):
            raise Rejected("number read in an unknown way: " + core)
    spelled = re.sub(r"(?<![0-9A-Za-z])([1-9])(?![0-9A-Za-z])", lambda m: _ONES[int(m.group(1))], written)
    return to_transcript(spelled)


def in_vocabulary(transcript: str) -> bool:
    return bool(transcript) and re.fullmatch(r"[a-z']+( [a-z']+)*", transcript) is not None


def load_dictionary(path: str = "/usr/share/dict/american-english") -> set[str]:
    """Words a TTS engine reads as words: lowercase entries and Capitalised names (lowercased).
    ALL-CAPS entries (acronyms, which engines spell out) are left out."""
    words = set()
    with open(path, encoding="utf-8", errors="ignore") as f:
        for line in f:
            w = line.strip()
            if not w:
                continue
            if w.islower() or (w[0].isupper() and (len(w) == 1 or w[1:].islower())):
                lw = w.lower()
                if re.fullmatch(r"[a-z]+('[a-z]+)?", lw):
                    words.add(lw)
    # Single letters other than 'a' and 'i' are read as letter names: not words.
    words -= {c for c in "bcdefghjklmnopqrstuvwxyz"}
    return words
