#!/usr/bin/python3
"""Real human speech for training and held-out evaluation, in make_data.py's shard format.

  /usr/bin/python3 tools/train/real_data.py --out data [--copies 3] [--workers 2]

Source: Debian's asterisk-core-sounds-en-wav (main, CC BY-SA 3.0): IVR prompts read by one US
female speaker (Allison Smith), 8 kHz, with their transcripts in core-sounds-en.txt.gz.
Because it is ONE speaker, a speaker hold-out is impossible: the hold-out is by whole prompt set
(the file name's family: 'vm-*', 'conf-*', 'digits/*', ...), so test prompts are sentences and
recording sessions never heard in training, by a voice that was. The held-out part measures
"real human speech" only in that weaker sense; the model card says so.

Splits written:
  train_real   training prompt sets, each prompt --copies times: once as recorded, the other
               copies through make_data's training augmentation (noise, reverb, speed, pitch, phone
               codecs), each copy drawn independently
  test_real    held-out prompt sets, as recorded (8 kHz resampled to 16 kHz), no augmentation
  test_real_phone  the same prompts through make_data's phone_noise condition (noise + a codec)
pocketsphinx-testdata is never read here: it is reserved for independent evaluation.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import augment  # noqa: E402
import make_data  # noqa: E402
import text_norm  # noqa: E402

ASTERISK_DIR = "/usr/share/asterisk/sounds/en"
ASTERISK_TEXT = "/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz"
# Share of the sentence prompts held out for test_real (whole prompt sets, see test_sets).
TEST_FRACTION = 0.25
# 'silence/N' files are silence whose "transcript" describes them: not speech.
EXCLUDED_SETS = {"silence"}
# Single-word sets (digits, letters, the phonetic alphabet) stay in training: a call-center model
# needs them, and held out they would make the test set mostly isolated words. The hold-out is
# drawn from the sentence prompts.
ALWAYS_TRAIN_SETS = {"digits", "letters", "phonetic"}
VOICE = "asterisk:allison"
# Misspellings in the package's transcript file, as the speaker says the words.
TRANSCRIPT_TYPOS = {"umute": "unmute", "decending": "descending", "represenatives": "representatives",
                    "witheld": "withheld", "indentified": "identified", "exclaimation": "exclamation",
                    "fourtieth": "fortieth"}


def prompt_transcript(written: str) -> str:
    """A prompt's label: text_norm.spoken_transcript() of its line (digits as said; raises
    text_norm.Rejected where the line does not give what is said), the file's typos corrected."""
    return " ".join(TRANSCRIPT_TYPOS.get(w, w) for w in text_norm.spoken_transcript(written).split())


def prompt_set(name: str) -> str:
    """'digits/7' -> 'digits'; 'vm-intro' -> 'vm'; 'agent-loginok' -> 'agent'."""
    if "/" in name:
        return name.split("/", 1)[0]
    return re.split(r"[-_]", name, maxsplit=1)[0]


def _set_hash(name: str) -> int:
    return int(hashlib.sha1(("asterisk-holdout/" + name).encode()).hexdigest(), 16)


def test_sets(prompts) -> set[str]:
    """Prompt sets held out: in an order fixed by a hash of their names (blind to content),
    sets are taken until at least TEST_FRACTION of the held-out-eligible prompts are in test."""
    sizes: dict[str, int] = {}
    for name, _, _ in prompts:
        ps = prompt_set(name)
        if ps not in ALWAYS_TRAIN_SETS:
            sizes[ps] = sizes.get(ps, 0) + 1
    total, taken, out = sum(sizes.values()), 0, set()
    for ps in sorted(sizes, key=_set_hash):
        if taken >= TEST_FRACTION * total:
            break
        out.add(ps)
        taken += sizes[ps]
    return out


def asterisk_prompts(min_words: int = 1) -> list[tuple[str, str, str]]:
    """(name, wav path, transcript) for every prompt whose text normalises to the model's
    alphabet."""
    if not os.path.exists(ASTERISK_TEXT):
        return []
    out = []
    with gzip.open(ASTERISK_TEXT, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_\-/]+):\s*(.+)$", line.strip())
            if not m:
                continue
            wav = os.path.join(ASTERISK_DIR, m.group(1) + ".wav")
            if not os.path.exists(wav) or prompt_set(m.group(1)) in EXCLUDED_SETS:
                continue
            try:
                text = prompt_transcript(m.group(2))
            except Exception:
                continue
            if not text or not text_norm.in_vocabulary(text) or len(text.split()) < min_words:
                continue
            out.append((m.group(1), wav, text))
    return out


def plans(prompts, copies: int, seed: int, shard_size: int) -> dict[str, list[list[dict]]]:
    items = {"train_real": [], "test_real": [], "test_real_phone": []}
    held = test_sets(prompts)
    for name, wav, text in prompts:
        if prompt_set(name) in held:
            copies_of = [("test_real", "clean"), ("test_real_phone", "phone_noise")]
        else:
            copies_of = [("train_real", "clean" if c == 0 else "train") for c in range(copies)]
        for c, (split, cond) in enumerate(copies_of):
            rng = random.Random(f"{seed}/{split}/{name}/{c}")
            items[split].append({
                "id": f"{split}-{name.replace('/', '_')}-{c}", "tts_text": text, "text": text,
                "source": "asterisk:" + prompt_set(name), "voice": VOICE, "tts": {"path": wav},
                "split": split, "condition": cond, "augment": augment.draw(rng, cond)})
    return make_data.shard_items(items, seed, shard_size)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data")
    ap.add_argument("--copies", type=int, default=3, help="copies of each training prompt")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=200)
    args = ap.parse_args(argv)
    prompts = asterisk_prompts()
    if not prompts:
        sys.exit("real_data: asterisk-core-sounds-en-wav is not installed (tools/setup.sh --train)")
    make_data.run_plans(args.out, plans(prompts, args.copies, args.seed, args.shard_size), args.workers)
    make_data.holdout_report(args.out, ("train_real", "test_real", "test_real_phone"),
                             lambda u: u["source"], "prompt_sets", "real_stats.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
