#!/usr/bin/python3
"""Real human speech of many speakers: The Ur-Quan Masters voice acting, cut into line-level
utterances, in make_data.py's shard format, with whole speakers held out.

  /usr/bin/python3 tools/train/uqm_data.py --out data [--copies 2] [--workers 2] [--src DIR]

Source: Debian's uqm-voice (the 3DO voice acting, 27 character voices, 11,025 Hz Ogg Vorbis) and
uqm-content (the dialogue text), both non-free, licence CC BY-NC-SA 2.5: NON-COMMERCIAL. A model
trained on it is for evaluation; the recipe builds one without it by simply not running this
script (train.py's --train-splits decides). The packages are only unpacked (`apt-get download`
+ `dpkg -x`, done here when --src has no copy); the game itself is not needed.

How a clip becomes lines: content/base/comm/<race>/<race>.txt holds blocks
    #(KEY)<TAB>race-NNN.ogg
    line 1
    line 2 ...
and voice/3dovoice/<race>/<race>.ts gives, for each KEY, the duration in milliseconds of each of
its lines, in order ("#(KEY) 8502,3188,..."). A block whose line count differs from its duration
count is skipped, as is any line that does not normalise to the model's alphabet.

Speakers are the race directories (yehat and yehatrebels are counted as one voice). Whole
speakers are held out: in an order fixed by a hash of their names (blind to content), speakers
are taken until TEST_FRACTION of the lines are held out. Voices known to be effect-processed
(robotic, pitch-layered) are never held out, so the test measures human voices; they still train.

Splits written:
  train_uqm       lines of the training speakers, --copies times (once as recorded, the others
                  through make_data's training augmentation)
  test_uqm        lines of the held-out speakers, as recorded (11,025 Hz resampled to 16 kHz)
  test_uqm_phone  the same lines through make_data's phone_noise condition (noise + a codec)
pocketsphinx-testdata is never read here.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import augment  # noqa: E402
import make_data  # noqa: E402
import text_norm  # noqa: E402

VOICE_ZIP = "usr/share/games/uqm/content/addons/uqm-0.8.0-voice.uqm"
CONTENT_ZIP = "usr/share/games/uqm/content/packages/uqm-0.8.0-content.uqm"
PACKAGES = ("uqm-voice", "uqm-content")
LICENCE = "CC BY-NC-SA 2.5 (non-commercial)"
TEST_FRACTION = 0.15
# Effect-processed voices (synthesised probe, layered or pitch-shifted aliens): trained on, never
# held out.
PROCESSED = {"arilou", "chmmr", "kohrah", "mycon", "probe", "slylandro", "talkingpet", "urquan",
             "zoqfotpik", "orz", "umgah"}
SAME_SPEAKER = {"yehatrebels": "yehat"}
MIN_SECONDS, MAX_SECONDS = 0.6, 20.0


def speaker(race: str) -> str:
    return SAME_SPEAKER.get(race, race)


def find_zips(src: str) -> tuple[str, str] | None:
    for root in ("/", src):
        v, c = os.path.join(root, VOICE_ZIP), os.path.join(root, CONTENT_ZIP)
        if os.path.exists(v) and os.path.exists(c):
            return v, c
    return None


def fetch(src: str) -> tuple[str, str]:
    """The two .uqm archives: installed, already unpacked under src, or downloaded and unpacked
    there now (apt-get download needs the non-free component: tools/setup.sh --train)."""
    found = find_zips(src)
    if found:
        return found
    os.makedirs(src, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=src, check=True)
    for deb in glob.glob(os.path.join(src, "*.deb")):
        subprocess.run(["dpkg", "-x", deb, src], check=True)
    found = find_zips(src)
    if not found:
        sys.exit(f"uqm_data: {VOICE_ZIP} not found after unpacking {PACKAGES} into {src}")
    return found


def parse_text(text: str) -> dict[str, tuple[str, list[str]]]:
    """KEY -> (ogg name, lines) for blocks that have a clip."""
    out, key, ogg, lines = {}, None, None, []

    def close():
        if key and ogg:
            out[key] = (ogg, [ln for ln in lines if ln.strip()])

    for raw in text.splitlines():
        m = re.match(r"^#\(([^)]+)\)\s*(\S*)", raw)
        if m:
            close()
            key, ogg, lines = m.group(1), (m.group(2) or None), []
        elif key is not None and raw.strip():
            lines.append(raw.strip())
    close()
    return out


def parse_ts(text: str) -> dict[str, list[int]]:
    out = {}
    for raw in text.splitlines():
        m = re.match(r"^#\(([^)]+)\)\s*([0-9,\s]*)$", raw.strip())
        if m and m.group(2).strip():
            out[m.group(1)] = [int(x) for x in m.group(2).replace(" ", "").split(",") if x]
    return out


def lines_of(voice_zip: str, content_zip: str):
    """(race, key, line index, ogg member, start ms, end ms, transcript) for every usable line."""
    with zipfile.ZipFile(voice_zip) as vz, zipfile.ZipFile(content_zip) as cz:
        names = set(vz.namelist())
        for ts_name in sorted(n for n in names if n.endswith(".ts")):
            race = os.path.basename(os.path.dirname(ts_name))
            try:
                txt = cz.read(f"base/comm/{race}/{race}.txt").decode("utf-8", "replace")
            except KeyError:
                continue
            blocks = parse_text(txt)
            durations = parse_ts(vz.read(ts_name).decode("utf-8", "replace"))
            for key, (ogg, lines) in blocks.items():
                member = f"{os.path.dirname(ts_name)}/{ogg}"
                ms = durations.get(key, [])
                # The .ts gives every line's duration but the last's: the last line runs to the
                # end of the clip (end None here, resolved when the clip is read).
                if member not in names or len(ms) != len(lines) - 1:
                    continue
                start = 0
                for i, line in enumerate(lines):
                    end = start + ms[i] if i < len(ms) else None
                    try:
                        t = text_norm.normalize(line, keep_punct=False)
                    except Exception:
                        t = ""
                    if (t and text_norm.in_vocabulary(t)
                            and (end is None or MIN_SECONDS <= (end - start) / 1000 <= MAX_SECONDS)):
                        yield race, key, i, member, start, end, t
                    if end is not None:
                        start = end


def test_speakers(lines) -> set[str]:
    counts: dict[str, int] = {}
    for ln in lines:
        counts[speaker(ln[0])] = counts.get(speaker(ln[0]), 0) + 1
    total, taken, out = sum(counts.values()), 0, set()
    eligible = [s for s in counts if s not in PROCESSED]
    for s in sorted(eligible, key=lambda s: hashlib.sha1(("uqm-holdout/" + s).encode()).hexdigest()):
        if taken >= TEST_FRACTION * total:
            break
        out.add(s)
        taken += counts[s]
    return out


def cut_lines(voice_zip: str, lines, wav_dir: str) -> dict[tuple, str]:
    """Writes each line as 16-bit WAV at the clip's own rate; (race, key, i) -> path."""
    import numpy as np
    import soundfile as sf
    by_clip: dict[str, list] = {}
    for ln in lines:
        by_clip.setdefault(ln[3], []).append(ln)
    out = {}
    with zipfile.ZipFile(voice_zip) as vz:
        for member, lns in sorted(by_clip.items()):
            paths = {ln[:3]: os.path.join(wav_dir, ln[0], f"{ln[1]}-{ln[2]}.wav") for ln in lns}
            if all(os.path.exists(p) for p in paths.values()):
                out.update(paths)
                continue
            x, sr = sf.read(io.BytesIO(vz.read(member)), dtype="float32", always_2d=True)
            x = x.mean(axis=1)
            for ln in lns:
                a = int(ln[4] * sr / 1000)
                b = len(x) if ln[5] is None else min(len(x), int(ln[5] * sr / 1000))
                if not MIN_SECONDS * sr <= b - a <= MAX_SECONDS * sr:
                    continue
                p = paths[ln[:3]]
                os.makedirs(os.path.dirname(p), exist_ok=True)
                sf.write(p + ".part.wav", np.clip(x[a:b], -1, 1), sr, subtype="PCM_16")
                os.replace(p + ".part.wav", p)
                out[ln[:3]] = p
    return out


def plans(lines, wavs, held, copies: int, seed: int, shard_size: int) -> dict[str, list[list[dict]]]:
    items = {"train_uqm": [], "test_uqm": [], "test_uqm_phone": []}
    for ln in lines:
        wav = wavs.get(ln[:3])
        if not wav:
            continue
        race, key, i, text = ln[0], ln[1], ln[2], ln[6]
        if speaker(race) in held:
            copies_of = [("test_uqm", "clean"), ("test_uqm_phone", "phone_noise")]
        else:
            copies_of = [("train_uqm", "clean" if c == 0 else "train") for c in range(copies)]
        for c, (split, cond) in enumerate(copies_of):
            rng = random.Random(f"{seed}/{split}/{race}/{key}/{i}/{c}")
            items[split].append({
                "id": f"{split}-{race}-{key}-{i}-{c}", "tts_text": text, "text": text,
                "source": "uqm:" + speaker(race), "voice": "uqm:" + speaker(race),
                "tts": {"path": wav}, "split": split, "condition": cond,
                "augment": augment.draw(rng, cond)})
    return make_data.shard_items(items, seed, shard_size)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data")
    ap.add_argument("--src", default="", help="where the packages are (or will be) unpacked "
                    "(default: OUT/uqm_src)")
    ap.add_argument("--copies", type=int, default=2, help="copies of each training line")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=200)
    ap.add_argument("--list", action="store_true", help="print the speakers and split, write nothing")
    args = ap.parse_args(argv)
    src = args.src or os.path.join(args.out, "uqm_src")
    voice_zip, content_zip = fetch(src)
    lines = list(lines_of(voice_zip, content_zip))
    held = test_speakers(lines)
    per: dict[str, list] = {}
    for ln in lines:
        s = per.setdefault(speaker(ln[0]), [0, 0.0])
        s[0] += 1
        s[1] += (ln[5] - ln[4]) / 3.6e6 if ln[5] is not None else 0.0
    for s, (n, h) in sorted(per.items()):
        print(f"{s:12s} {n:5d} lines {h:6.3f} h (last lines of clips not counted) {'TEST' if s in held else ''}"
              f"{' processed' if s in PROCESSED else ''}", flush=True)
    if args.list:
        return 0
    wavs = cut_lines(voice_zip, lines, os.path.join(args.out, "uqm_lines"))
    make_data.run_plans(args.out, plans(lines, wavs, held, args.copies, args.seed, args.shard_size),
                        args.workers)
    make_data.holdout_report(args.out, ("train_uqm", "test_uqm", "test_uqm_phone"),
                             lambda u: u["voice"], "speakers", "uqm_stats.json", {"licence": LICENCE})
    return 0


if __name__ == "__main__":
    sys.exit(main())
