#!/usr/bin/python3
"""Generate the synthetic English call-center training data for the default CTC model.

  /usr/bin/python3 tools/train/make_data.py --out data --hours 10 --seed 1 --workers 2

Rerunnable and resumable: the work is cut into shards; a shard is planned (texts, voices, TTS and
augmentation parameters) from (seed, split, shard index) alone, and a finished shard is skipped
when its plan is unchanged, so a killed run continues where it stopped and a rerun with more
--hours only adds shards. Same arguments -> same bytes.

Output under --out:
  audio/<split>/<shard>/<utt>.wav     16 kHz mono 16-bit
  feats/<split>/<shard>.npy           80-dim Kaldi fbank of every utterance of the shard,
                                      concatenated [frames, 80]; manifest gives offset/frames
  shards/<split>/<shard>.json         a shard's manifest lines + plan hash (written last)
  manifests/<split>.jsonl             id, path, text, voice, split, condition, augment, duration..
  text/train_sentences.txt            every train transcript (for the n-gram LM)
  text/lm_corpus.txt                  train transcripts + all train fortune sentences + extra
                                      grammar sentences (never a dev/test sentence)
  voices.json, config.json, espeak/   voice inventory and split, arguments, private espeak data
Splits: train; dev (seen voices, held-out sentences, train-like augmentation); dev_unseen (dev
voices, clean); test_clean, test_phone (seen voices, test sentences, clean / phone channel+noise);
test_unseen, test_unseen_phone (test voices). All test splits read the same sentences, and each
pair (clean/phone) the same voices, so conditions compare directly.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import augment  # noqa: E402
import call_grammar  # noqa: E402
import corpus  # noqa: E402
import text_norm  # noqa: E402
import voices  # noqa: E402

GENERATOR_VERSION = 1      # bump when output for the same plan changes
EST_UTT_SECONDS = 5.0      # first guess of the mean utterance length, refined from real shards

# split -> (voice class, sentence split, augmentation condition, plan key shared by pairs)
SPLITS = {
    "train": ("train", "train", "train", "train"),
    "dev": ("train", "dev", "mixed", "dev"),
    "dev_unseen": ("dev", "dev", "clean", "dev_unseen"),
    "test_clean": ("train", "test", "clean", "test_seen"),
    "test_phone": ("train", "test", "phone_noise", "test_seen"),
    "test_unseen": ("test", "test", "clean", "test_unseen"),
    "test_unseen_phone": ("test", "test", "phone_noise", "test_unseen"),
}


def _rng(*parts) -> random.Random:
    return random.Random("/".join(str(p) for p in parts))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="data", help="output directory (default: data/)")
    p.add_argument("--hours", type=float, default=10.0, help="train audio to generate (hours)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--shard-size", type=int, default=200, help="utterances per shard")
    p.add_argument("--dev-utts", type=int, default=400, help="utterances in dev and dev_unseen")
    p.add_argument("--test-utts", type=int, default=400, help="utterances in each test split")
    p.add_argument("--lm-extra", type=int, default=100000,
                   help="extra grammar sentences in text/lm_corpus.txt")
    p.add_argument("--splits", default=",".join(SPLITS),
                   help="comma-separated subset of: " + ",".join(SPLITS))
    p.add_argument("--mix", choices=sorted(voices.MIXES), default="formant",
                   help="engine shares: formant (the first default model's) or human "
                        "(recording-based voices, formant voices a small share)")
    p.add_argument("--commercial-only", action="store_true",
                   help="leave out voices whose data licence is non-commercial (voices.NONCOMMERCIAL_VOICES)")
    p.add_argument("--feat-dtype", choices=["float32", "float16"], default="float32")
    p.add_argument("--no-feats", action="store_true", help="audio only")
    p.add_argument("--list-voices", action="store_true", help="print the voice split and exit")
    args = p.parse_args(argv)
    args.splits = [s for s in args.splits.split(",") if s]
    for s in args.splits:
        if s not in SPLITS:
            p.error(f"unknown split {s}")
    return args


# ---------------------------------------------------------------- planning

class Planner:
    def __init__(self, args, fortunes, flite_voices, festival_ok):
        self.args = args
        self.sources = {s: corpus.SentenceSource(fortunes, s) for s in ("train", "dev", "test")}
        self.inventories = {c: voices.Inventory(c, flite_voices, festival_ok, args.mix,
                                                        args.commercial_only)
                            for c in ("train", "dev", "test")}
        self._fixed: dict[str, list] = {}

    def fixed_sentences(self, sent_split: str, n: int) -> list[tuple[str, str, str]]:
        """The dev or test sentence list: n distinct sentences, the same for every split that
        reads it."""
        if sent_split not in self._fixed:
            rng = _rng(self.args.seed, "sentences", sent_split)
            out, seen = [], set()
            for _ in range(200 * n):
                if len(out) == n:
                    break
                tts, tr, src = self.sources[sent_split].draw(rng)
                if tr not in seen:
                    seen.add(tr)
                    out.append((tts, tr, src))
            self._fixed[sent_split] = out
        return self._fixed[sent_split]

    def n_utts(self, split: str) -> int:
        if split.startswith("test"):
            return self.args.test_utts
        return self.args.dev_utts

    def shard(self, split: str, k: int) -> list[dict]:
        voice_class, sent_split, condition, key = SPLITS[split]
        size = self.args.shard_size
        if split == "train":
            idx = range(size)
        else:
            total = self.n_utts(split)
            idx = range(min(size, max(0, total - k * size)))
        fixed = None if split == "train" else self.fixed_sentences(sent_split, self.n_utts(split))
        vrng = _rng(self.args.seed, key, k, "voice")       # shared by a clean/phone pair
        arng = _rng(self.args.seed, split, k, "augment")
        trng = _rng(self.args.seed, key, k, "text")
        plan = []
        for i in idx:
            if fixed is None:
                tts, tr, src = self.sources["train"].draw(trng)
            else:
                j = k * size + i
                if j >= len(fixed):
                    break
                tts, tr, src = fixed[j]
            voice = self.inventories[voice_class].draw(vrng)
            plan.append({"id": f"{split}-{k:05d}-{i:04d}", "tts_text": tts, "text": tr,
                         "source": src, "voice": voice, "tts": voices.draw_tts_params(voice, vrng),
                         "split": split, "condition": condition,
                         "augment": augment.draw(arng, condition)})
        return plan

    def n_shards(self, split: str) -> int:
        return math.ceil(self.n_utts(split) / self.args.shard_size)


def plan_hash(plan: list[dict], args) -> str:
    blob = json.dumps({"v": GENERATOR_VERSION, "feats": not args.no_feats,
                       "dtype": args.feat_dtype, "plan": plan}, sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()


def shard_name(split: str, k: int) -> str:
    return f"{split}-{k:05d}"


def shard_record_path(out: str, split: str, k: int) -> str:
    return os.path.join(out, "shards", split, shard_name(split, k) + ".json")


def load_done(out: str, split: str, k: int, sha: str) -> dict | None:
    path = shard_record_path(out, split, k)
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    return rec if rec.get("plan_sha") == sha else None


# ---------------------------------------------------------------- worker

_WORKER = {}


def _worker_init():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(1)
    _WORKER["torch"] = torch


def _fbank(int16_samples):
    import numpy as np
    import torchaudio
    torch = _WORKER["torch"]
    wave = torch.from_numpy(int16_samples.astype(np.float32) / 32768.0).unsqueeze(0)
    return torchaudio.compliance.kaldi.fbank(
        wave * 32768, num_mel_bins=80, frame_length=25, frame_shift=10, dither=0.0,
        energy_floor=0.0, sample_frequency=16000).numpy()


def process_shard(job: dict) -> dict:
    import numpy as np
    import soundfile as sf
    out, split, k, plan = job["out"], job["split"], job["k"], job["plan"]
    name = shard_name(split, k)
    t0 = time.time()
    tmp = os.path.join(out, "tmp", name)
    audio_dir = os.path.join(out, "audio", split, name)
    feat_path = os.path.join(out, "feats", split, name + ".npy")
    for p in (tmp, audio_dir + ".part"):
        shutil.rmtree(p, ignore_errors=True)
    os.makedirs(tmp)
    os.makedirs(audio_dir + ".part")
    # 1. TTS
    festival_jobs: dict[str, list] = {}
    for u in plan:
        wav = os.path.join(tmp, u["id"] + ".wav")
        engine = u["voice"].split(":", 1)[0]
        if "path" in u["tts"]:
            # A real recording (real_data.py): its "tts" parameters name the file.
            shutil.copyfile(u["tts"]["path"], wav)
        elif engine == "espeak":
            voices.synth_espeak(job["espeak_root"], u["voice"], u["tts"], u["tts_text"], wav)
        elif engine == "flite":
            voices.synth_flite(u["voice"], u["tts"], u["tts_text"], wav)
        elif engine == "rhvoice":
            voices.synth_rhvoice(u["voice"], u["tts"], u["tts_text"], wav)
        elif engine == "pico":
            voices.synth_pico(u["voice"], u["tts"], u["tts_text"], wav)
        elif engine == "mbrola":
            voices.synth_mbrola(u["voice"], u["tts"], u["tts_text"], wav)
        else:
            festival_jobs.setdefault(u["voice"], []).append((u["tts_text"], u["tts"], wav))
    for v, items in sorted(festival_jobs.items()):
        voices.synth_festival(v, items, tmp)
    t_tts = time.time()
    # 2. voice / room (sox)
    stage1, failed = {}, []
    for u in plan:
        wav = os.path.join(tmp, u["id"] + ".wav")
        try:
            if not os.path.exists(wav) or os.path.getsize(wav) < 2000:
                raise augment.AugmentError("tts produced no audio")
            x = augment.voice_room(wav, u["augment"])
            if len(x) < 0.3 * augment.SR or float(np.abs(x).max()) < 1e-3:
                raise augment.AugmentError("tts audio too short or silent")
            stage1[u["id"]] = x
        except augment.AugmentError as e:
            failed.append({"id": u["id"], "voice": u["voice"], "error": str(e)})
    t_sox = time.time()
    t_feat = 0.0
    # 3. noise, level, channel; features
    lines, feats, offset = [], [], 0
    ids = [u["id"] for u in plan if u["id"] in stage1]
    for u in plan:
        if u["id"] not in stage1:
            continue
        others = [stage1[i] for i in ids if i != u["id"]]
        try:
            y = augment.apply(stage1[u["id"]], u["augment"], others)
        except augment.AugmentError as e:
            failed.append({"id": u["id"], "voice": u["voice"], "error": str(e)})
            continue
        sf.write(os.path.join(audio_dir + ".part", u["id"] + ".wav"), y, augment.SR,
                 subtype="PCM_16")
        rec = {k2: u[k2] for k2 in ("id", "text", "tts_text", "source", "voice", "tts", "split",
                                    "condition", "augment")}
        rec["engine"] = u["voice"].split(":", 1)[0]
        rec["path"] = os.path.join("audio", split, name, u["id"] + ".wav")
        rec["duration"] = round(len(y) / augment.SR, 3)
        rec["num_samples"] = int(len(y))
        if not job["no_feats"]:
            tf = time.time()
            f = _fbank(y).astype(job["feat_dtype"])
            t_feat += time.time() - tf
            feats.append(f)
            rec["feats"] = {"path": os.path.join("feats", split, name + ".npy"),
                            "offset": offset, "frames": int(f.shape[0])}
            offset += f.shape[0]
        lines.append(rec)
    if len(failed) > 0.2 * max(1, len(plan)):
        raise RuntimeError(f"{name}: {len(failed)} of {len(plan)} utterances failed: {failed[:3]}")
    # 4. publish: audio dir, feats, then the record (its presence marks the shard done)
    shutil.rmtree(audio_dir, ignore_errors=True)
    os.replace(audio_dir + ".part", audio_dir)
    if not job["no_feats"]:
        os.makedirs(os.path.dirname(feat_path), exist_ok=True)
        arr = np.concatenate(feats) if feats else np.zeros((0, 80), dtype=job["feat_dtype"])
        with open(feat_path + ".part", "wb") as fh:
            np.save(fh, arr)
        os.replace(feat_path + ".part", feat_path)
    rec_path = shard_record_path(out, split, k)
    os.makedirs(os.path.dirname(rec_path), exist_ok=True)
    t_end = time.time()
    record = {"shard": name, "plan_sha": job["sha"], "utts": lines, "failed": failed,
              "seconds": round(t_end - t0, 2),
              "stage_seconds": {"tts": round(t_tts - t0, 2), "voice_room": round(t_sox - t_tts, 2),
                                "noise_channel": round(t_end - t_sox - t_feat, 2),
                                "fbank": round(t_feat, 2)},
              "audio_seconds": round(sum(r["duration"] for r in lines), 2)}
    with open(rec_path + ".part", "w") as fh:
        json.dump(record, fh)
    os.replace(rec_path + ".part", rec_path)
    shutil.rmtree(tmp, ignore_errors=True)
    return record


# ---------------------------------------------------------------- driver

MADE = {"utts": 0, "audio_s": 0.0, "wall_s": 0.0}   # shards made by this run (not skipped)


def run_jobs(jobs: list[dict], workers: int) -> list[dict]:
    if not jobs:
        return []
    results = []
    t0 = time.time()
    ctx = mp.get_context("fork")
    with ctx.Pool(max(1, workers), initializer=_worker_init) as pool:
        for rec in pool.imap_unordered(process_shard, jobs):
            results.append(rec)
            n = len(rec["utts"])
            print(f"[{rec['shard']}] {n} utts, {rec['audio_seconds']:.0f} s audio, "
                  f"{rec['seconds']:.1f} s ({n / max(rec['seconds'], 1e-9):.2f} utt/s/worker), "
                  f"{len(rec['failed'])} failed; {len(results)}/{len(jobs)} shards, "
                  f"{time.time() - t0:.0f} s", flush=True)
    MADE["utts"] += sum(len(r["utts"]) for r in results)
    MADE["audio_s"] += sum(r["audio_seconds"] for r in results)
    MADE["wall_s"] += time.time() - t0
    return results


def shard_items(items: dict[str, list[dict]], seed: int, shard_size: int) -> dict[str, list[list[dict]]]:
    """Each split's prepared utterances in a seeded order, cut into shards of shard_size."""
    out = {}
    for split, lst in items.items():
        random.Random(f"{seed}/{split}/order").shuffle(lst)
        out[split] = [lst[i:i + shard_size] for i in range(0, len(lst), shard_size)]
    return out


def run_plans(out: str, plans: dict[str, list[list[dict]]], workers: int) -> None:
    """Makes every shard of prepared plans ({split: [shard plan, ...]}, as real_data.py and
    uqm_data.py write them) that is not already done, with features in float32."""
    margs = argparse.Namespace(no_feats=False, feat_dtype="float32")
    jobs = []
    for split, shards in plans.items():
        for k, plan in enumerate(shards):
            sha = plan_hash(plan, margs)
            if load_done(out, split, k, sha) is None:
                jobs.append({"out": out, "split": split, "k": k, "plan": plan, "sha": sha,
                             "espeak_root": "", "no_feats": False, "feat_dtype": "float32"})
    run_jobs(jobs, workers)


def split_utts(out: str, split: str) -> list[dict]:
    """Every utterance record of a split's finished shards, in shard order."""
    import glob
    utts = []
    for p in sorted(glob.glob(os.path.join(out, "shards", split, "*.json"))):
        with open(p) as f:
            utts += json.load(f)["utts"]
    return utts


def holdout_report(out: str, splits: tuple[str, str, str], group_of, group_name: str, stats_file: str,
                   extra: dict | None = None) -> dict:
    """Counts (utterances, hours, groups) of a real-speech source's splits (train, test,
    test_phone), prints them, writes them to out/stats_file, and raises when a group (a prompt
    set, a speaker) is in both train and test: the hold-out is then broken."""
    stats = {}
    for split in splits:
        utts = split_utts(out, split)
        groups = sorted({group_of(u) for u in utts})
        stats[split] = {"utts": len(utts), "hours": round(sum(u["duration"] for u in utts) / 3600, 4),
                        group_name: groups, **(extra or {})}
        print(f"{split}: {len(utts)} utterances, {stats[split]['hours']:.3f} h, "
              f"{len(groups)} {group_name.replace('_', ' ')}", flush=True)
    shared = set(stats[splits[0]][group_name]) & set(stats[splits[1]][group_name])
    if shared:
        raise RuntimeError(f"hold-out violated: {group_name.replace('_', ' ')} in both splits: {sorted(shared)}")
    with open(os.path.join(out, stats_file), "w") as f:
        json.dump(stats, f, indent=1)
    return stats


def make_job(args, planner, split, k, espeak_root):
    plan = planner.shard(split, k)
    sha = plan_hash(plan, args)
    return {"out": args.out, "split": split, "k": k, "plan": plan, "sha": sha,
            "espeak_root": espeak_root, "no_feats": args.no_feats, "feat_dtype": args.feat_dtype}


def generate(args, planner, espeak_root) -> dict[str, list[dict]]:
    """Make every missing shard of the chosen splits in one worker pool; then add train shards
    until train reaches --hours (train keeps shards 0..N-1, N the smallest count that does)."""
    target = args.hours * 3600.0
    done: dict[str, dict[int, dict]] = {s: {} for s in args.splits}
    n_train = max(1, math.ceil(target / (args.shard_size * EST_UTT_SECONDS)))

    def run(wanted: list[tuple[str, int]]):
        todo = []
        for split, k in wanted:
            if k in done[split]:
                continue
            job = make_job(args, planner, split, k, espeak_root)
            rec = load_done(args.out, split, k, job["sha"])
            if rec is not None:
                done[split][k] = rec
            else:
                todo.append(job)
        if todo:
            print(f"{len(todo)} shard(s) to make, "
                  f"{sum(len(d) for d in done.values())} already done", flush=True)
        for rec in run_jobs(todo, args.workers):
            split, k = rec["shard"].rsplit("-", 1)
            done[split][int(k)] = rec

    wanted = [(s, k) for s in args.splits
              for k in (range(n_train) if s == "train" else range(planner.n_shards(s)))]
    run(wanted)
    out = {s: [done[s][k] for k in sorted(done[s])] for s in args.splits if s != "train"}
    if "train" in args.splits:
        while True:
            total, n_needed = 0.0, None
            for k in range(n_train):
                total += done["train"][k]["audio_seconds"]
                if total >= target:
                    n_needed = k + 1
                    break
            if n_needed is not None:
                out["train"] = [done["train"][k] for k in range(n_needed)]
                break
            more = math.ceil((target - total) / max(total / n_train, 1.0))
            n_train += max(1, more)
            run([("train", k) for k in range(n_train)])
    return out


def write_lines(path: str, lines) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".part", "w") as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(path + ".part", path)


def check_tools():
    missing = [t for t in ("espeak-ng", "sox", "opusenc", "opusdec") if shutil.which(t) is None]
    if missing:
        sys.exit("make_data: missing tools: " + " ".join(missing) +
                 " (tools/setup.sh --train installs them)")


def check_espeak(espeak_root: str) -> None:
    """Run voices.verify_espeak_voices once per variant set (about a minute); cached."""
    key = hashlib.sha1("".join(voices.generated_variant_text(n) for n in
                               voices.generated_variant_names()).encode()
                       + " ".join(voices.shipped_variants()).encode()).hexdigest()
    marker = os.path.join(espeak_root, "verified")
    if os.path.exists(marker) and open(marker).read().strip() == key:
        return
    print("checking that every espeak accent and variant is applied...", flush=True)
    bad = voices.verify_espeak_voices(espeak_root, os.path.join(espeak_root, "check"))
    if bad:
        sys.exit("make_data: espeak-ng ignores these voices/variants: " + " ".join(bad))
    with open(marker, "w") as f:
        f.write(key + "\n")


def voice_report(flite_voices, festival_ok, mix: str = "formant", commercial_only: bool = False) -> dict:
    rep = {}
    for c in ("train", "dev", "test"):
        inv = voices.Inventory(c, flite_voices, festival_ok, mix, commercial_only)
        esp = inv.espeak_voices()
        rep[c] = {"flite": inv.flite, "festival": inv.festival,
                  "espeak_accents": sorted({v.split(":")[1].split("+")[0] for v in esp}),
                  "espeak_shipped_variants": sorted({v.split("+")[1] for v in esp if "+" in v
                                                     and not v.split("+")[1].startswith("sluice_g")}),
                  "espeak_generated_variants": sorted({v.split("+")[1] for v in esp if "+" in v
                                                       and v.split("+")[1].startswith("sluice_g")}),
                  "recorded": inv.recorded, "engine_weights": dict(zip(inv.engines, inv.weights)),
                  "n_espeak_voices": len(esp)}
    return rep


def main(argv=None) -> int:
    args = parse_args(argv)
    check_tools()
    flite_voices = voices.flite_voices_available()
    festival_ok = voices.festival_available()
    if not festival_ok:
        print("make_data: festival not found: festival voices are left out", file=sys.stderr)
    report = voice_report(flite_voices, festival_ok, args.mix, args.commercial_only)
    if args.list_voices:
        print(json.dumps(report, indent=1))
        return 0
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, ".gitignore"), "w") as f:
        f.write("# generated training data: never committed\n*\n")
    text_norm.write_tokens(os.path.join(args.out, "tokens.txt"))
    espeak_root = voices.prepare_espeak_data(os.path.join(os.path.abspath(args.out), "espeak"))
    check_espeak(espeak_root)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump({"args": vars(args), "generator_version": GENERATOR_VERSION}, f, indent=1)
    t0 = time.time()
    fortunes = corpus.load_fortune_sentences()
    planner = Planner(args, fortunes, flite_voices, festival_ok)
    print(f"{len(fortunes)} fortune sentences ({len(planner.sources['train'].fortunes)} train)",
          flush=True)
    usage: dict[str, dict[str, int]] = {}
    n_utts, audio_s = 0, 0.0
    made = generate(args, planner, espeak_root)
    for split in args.splits:
        recs = made[split]
        utts = [u for r in recs for u in r["utts"]]
        write_lines(os.path.join(args.out, "manifests", split + ".jsonl"),
                    (json.dumps(u, sort_keys=True) for u in utts))
        if split == "train":
            write_lines(os.path.join(args.out, "text", "train_sentences.txt"),
                        (u["text"] for u in utts))
        for u in utts:
            usage.setdefault(split, {}).setdefault(u["voice"], 0)
            usage[split][u["voice"]] += 1
        dur = sum(u["duration"] for u in utts)
        n_utts, audio_s = n_utts + len(utts), audio_s + dur
        print(f"{split}: {len(utts)} utterances, {dur / 3600:.3f} h, "
              f"{len(usage.get(split, {}))} voices", flush=True)
    if "train" in args.splits:
        lm = _rng(args.seed, "lm")
        src = planner.sources["train"]
        with open(os.path.join(args.out, "text", "train_sentences.txt")) as f:
            train_lines = [line.rstrip("\n") for line in f]
        grammar = []
        while len(grammar) < args.lm_extra:
            tts = call_grammar.expand(lm)
            tr = text_norm.to_transcript(tts)
            if corpus.holdout_split(tr) == "train":
                grammar.append(tr)
        write_lines(os.path.join(args.out, "text", "lm_corpus.txt"),
                    train_lines + [text_norm.to_transcript(s) for s in src.fortunes] + grammar)
    report["used"] = {s: {"n_voices": len(v), "utts_per_voice": v} for s, v in usage.items()}
    with open(os.path.join(args.out, "voices.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    stats = check_splits(args.out, args.splits)
    with open(os.path.join(args.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    try:
        os.rmdir(os.path.join(args.out, "tmp"))
    except OSError:
        pass
    print(f"all splits: {n_utts} utterances, {audio_s / 3600:.3f} h", flush=True)
    if MADE["utts"]:
        w = MADE["wall_s"]
        print(f"made now: {MADE['utts']} utterances, {MADE['audio_s'] / 3600:.3f} h of audio in "
              f"{w:.0f} s with {args.workers} workers: {MADE['utts'] / w:.2f} utt/s, "
              f"{MADE['audio_s'] / w:.1f}x real time", flush=True)
    return 0


def check_splits(out: str, splits: list[str]) -> dict:
    """Hold-out checks on the written manifests, plus counts; fails loudly on a leak."""
    man = {}
    for s in splits:
        with open(os.path.join(out, "manifests", s + ".jsonl")) as f:
            man[s] = [json.loads(line) for line in f]
    stats = {s: {"utts": len(u), "hours": round(sum(x["duration"] for x in u) / 3600, 4),
                 "voices": len({x["voice"] for x in u}),
                 "engines": {e: sum(x["engine"] == e for x in u)
                             for e in sorted({x["engine"] for x in u})}}
             for s, u in man.items()}
    if "train" in man:
        train_text = {x["text"] for x in man["train"]}
        train_voices = {x["voice"] for x in man["train"]}
        leaks = []
        for s, u in man.items():
            if s == "train":
                continue
            shared = sum(x["text"] in train_text for x in u)
            stats[s]["sentences_in_train"] = shared
            if shared:
                leaks.append(f"{s}: {shared} sentences also in train")
            if SPLITS[s][0] != "train":
                seen = sum(x["voice"] in train_voices for x in u)
                stats[s]["voices_in_train"] = seen
                if seen:
                    leaks.append(f"{s}: {seen} utterances by train voices")
        if leaks:
            raise RuntimeError("hold-out violated: " + "; ".join(leaks))
    for s, u in man.items():
        bad = [x for x in u if voices.voice_split(x["voice"]) != SPLITS[s][0]
               or corpus.holdout_split(x["text"]) != SPLITS[s][1]]
        if bad:
            raise RuntimeError(f"{s}: {len(bad)} utterances of the wrong voice/sentence class")
    return stats


if __name__ == "__main__":
    sys.exit(main())
