#!/usr/bin/python3
"""Held-out evaluation of a checkpoint: CER/WER per condition and expert load balance.

  /usr/bin/python3 tools/train/evaluate.py --ckpt runs/default/best.pt --data data [--json out.json]
  /usr/bin/python3 tools/train/evaluate.py --model-dir models/default --data data ...

Conditions (splits written by make_data.py / real_data.py; those missing are skipped): test_clean
(seen voices, unseen sentences), test_phone (same, through an 8 kHz phone channel with noise),
test_unseen / test_unseen_phone (voices never trained on), test_real / test_real_phone (held-out
prompt sets of Debian's asterisk-core-sounds-en-wav: real human speech, one speaker, 8 kHz, as
recorded / through a phone codec with noise). --all-asterisk adds "real_asterisk", every prompt of
that package, which a model trained by real_data.py has partly heard (the first default model had
not). Decoding is greedy CTC (the engine's beam search + LM is measured by `sluice transcribe`).
Per condition: CER, WER, and oov_rate, the fraction of output words not in
/usr/share/dict/american-english (words run together or misspelt come out as non-words).

With --engine build/release/tools/sluice (no --ckpt needed), the recorded audio of the --splits in
--data (and, with --all-asterisk or when there are none, every asterisk prompt) goes through the C++
engine instead, once per decoder (`sluice transcribe --format json --decoder.mode=M`, M in
--decoders, default greedy,beam,lexicon), with the model directory of --model-dir (default
models/default): CER, WER and the not-in-word-list rate per condition and decoder:

  /usr/bin/python3 tools/train/evaluate.py --engine build/release/tools/sluice --data data [--json out.json]
With --manifest NAME=TSV (repeatable; engine only) the held-out rows of an extractor's manifest
(fotaq_data.py --manifest: clip, speaker, kind, seconds, wav, transcript, train|test; the rows
marked test) are one more condition NAME, without shards: e.g. the held-out characters of Flight
of the Amazon Queen as recorded (`fotaq_data.py --out D --manifest D/fotaq.tsv --no-shards`).
Expert balance is max/mean tokens per routed expert, per layer, over all test utterances.
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.environ.get("OMP_WAIT_POLICY") != "PASSIVE":
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import argparse  # noqa: E402
import json  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import AcousticModel, ModelConfig  # noqa: E402
import ctc_metrics  # noqa: E402
import dataset  # noqa: E402

SPLITS = ["test_clean", "test_phone", "test_unseen", "test_unseen_phone", "dev_unseen", "test_real",
          "test_real_phone"]
WORD_LIST = "/usr/share/dict/american-english"


def load_word_list(path: str = WORD_LIST) -> set[str]:
    """Lower-cased entries of the word list (wamerican); empty when it is not installed."""
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8", errors="replace") as f:
        return {line.strip().lower() for line in f if line.strip()}


def oov_rate(hyps: list[str], words: set[str]) -> float:
    """Fraction of hypothesis words (whitespace-separated) that are not in `words`."""
    toks = [w for h in hyps for w in h.split()]
    if not toks:
        return 0.0
    return sum(w not in words for w in toks) / len(toks)


def asterisk_set(tokens) -> list[tuple[str, np.ndarray, str]]:
    """(id, fbank [T, 80], transcript) for every prompt of asterisk_items()."""
    import soundfile as sf
    import torchaudio
    out = []
    for wav, text in asterisk_items():
        x, sr = sf.read(wav, dtype="float64")
        if x.ndim > 1:
            x = x[:, 0]
        w = torchaudio.functional.resample(torch.from_numpy(x)[None], sr, 16000)
        fb = torchaudio.compliance.kaldi.fbank(w * 32768.0, num_mel_bins=80, frame_length=25, frame_shift=10,
                                               dither=0.0, energy_floor=0.0, sample_frequency=16000)
        out.append((os.path.splitext(os.path.basename(wav))[0], fb.float().numpy(), text))
    return out


def score(model: AcousticModel, items, tokens, loads: list[torch.Tensor],
          words: set[str] | None = None) -> dict:
    """items: (fbank [T,80] np, text). Greedy CER/WER over all items (+ oov_rate with words)."""
    rates = ctc_metrics.ErrorRates()
    samples, hyps = [], []
    with torch.no_grad():
        for fb, ref in items:
            x = torch.from_numpy(np.ascontiguousarray(fb))[None]
            logits, out_len = model(x, torch.tensor([x.shape[1]]))
            for li, moe in enumerate(model.moe_layers()):
                loads[li] += moe.last_load
            hyp = ctc_metrics.greedy_decode(logits, out_len, tokens)[0]
            rates.add(hyp, ref)
            hyps.append(hyp)
            if len(samples) < 3:
                samples.append({"ref": ref, "hyp": hyp})
    out = {"utts": len(items), "cer": rates.cer(), "wer": rates.wer(), "samples": samples}
    if words:
        out["oov_rate"] = oov_rate(hyps, words)
        out["ref_oov_rate"] = oov_rate([r for _, r in items], words)
    return out


def read_json_stream(text: str) -> list[dict]:
    """The concatenated JSON documents `sluice transcribe --format json` prints, one per file."""
    out, dec, i = [], json.JSONDecoder(), 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        doc, i = dec.raw_decode(text, i)
        out.append(doc)


def asterisk_items() -> list[tuple[str, str]]:
    """(wav path, transcript) of every top-level asterisk prompt of two words or more whose text
    gives what is said (real_data.asterisk_prompts: held-out and training prompt sets alike)."""
    import real_data
    return [(os.path.realpath(wav), text) for name, wav, text in real_data.asterisk_prompts(min_words=2)
            if "/" not in name]


def split_items(data: str, split: str, max_utts: int) -> list[tuple[str, str]]:
    """(wav path, transcript) of a make_data.py / real_data.py split: its shards' utterances (as
    dataset.FeatureSet reads them), with their recorded audio."""
    import glob
    items = []
    for shard in sorted(glob.glob(os.path.join(data, "shards", split, "*.json"))):
        with open(shard, encoding="utf-8") as f:
            for u in json.load(f)["utts"]:
                wav = os.path.join(data, u.get("path", ""))
                if u.get("path") and os.path.exists(wav):
                    items.append((os.path.realpath(wav), u["text"]))
    return items[:max_utts]


def manifest_items(path: str, max_utts: int) -> list[tuple[str, str]]:
    """(wav path, transcript) of the rows of an extractor's TSV manifest marked "test" (relative
    wav paths are taken from the manifest's folder); more than max_utts: a fixed-seed random
    max_utts of them, not the first ones (manifests are in clip order, i.e. grouped by scene)."""
    import random
    items = []
    base = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 7:
                raise SystemExit(f"{path}: expected 7 tab-separated columns (clip, speaker, kind, "
                                 f"seconds, wav, transcript, train|test), got {len(cols)}: {line[:80]!r}")
            if cols[6] == "test":
                items.append((os.path.realpath(os.path.join(base, cols[4])), cols[5]))
    if not items:
        raise SystemExit(f"{path}: no rows marked test")
    if len(items) > max_utts:
        items = random.Random(0).sample(items, max_utts)
    return items


def engine_eval(args) -> dict:
    """CER/WER/oov_rate per condition and decoder mode, decoded by the C++ engine: the --splits of
    --data (their recorded audio) and, with --all-asterisk or when --data has none of them, every
    asterisk prompt. One `sluice transcribe` per mode over all files; its wall time is reported.
    With --shift-ms, also how far the text moves when the same audio arrives later (shift_eval)."""
    conditions: dict[str, list[tuple[str, str]]] = {}
    for split in [s for s in args.splits.split(",") if s]:
        items = split_items(args.data, split, args.max_utts)
        if items:
            conditions[split] = items
    for spec in args.manifest:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--manifest wants NAME=TSV, got {spec!r}")
        conditions[name] = manifest_items(path, args.max_utts)
    if args.all_asterisk or not conditions:
        items = asterisk_items()[: args.max_utts]
        if items:
            conditions["real_asterisk"] = items
    report: dict = {"engine": args.engine, "model_dir": args.model_dir, "data": args.data, "conditions": {}}
    if not conditions:
        print("no test audio found: nothing to evaluate", flush=True)
        return report
    words = load_word_list()
    files = sorted({w for items in conditions.values() for w, _ in items})
    by_mode: dict[str, dict[str, str]] = {}
    for mode in args.decoders.split(","):
        hyps, wall = engine_transcribe(args, mode, files)
        by_mode[mode] = hyps
        report.setdefault("wall_s", {})[mode] = round(wall, 2)
        for cond, items in conditions.items():
            rates = ctc_metrics.ErrorRates()
            outs = []
            for wav, ref in items:
                hyp = hyps.get(wav, "")
                rates.add(hyp, ref)
                outs.append(hyp)
            r = {"utts": len(items), "cer": rates.cer(), "wer": rates.wer(),
                 "samples": [{"ref": ref, "hyp": hyps.get(wav, "")} for wav, ref in items[:3]]}
            if words:
                r["oov_rate"] = oov_rate(outs, words)
            report["conditions"][cond + "/" + mode] = r
            print(f"{cond} {mode}: utts {len(items)} CER {rates.cer():.3f} WER {rates.wer():.3f}"
                  + (f" not-in-word-list {r['oov_rate']:.3f}" if words else ""), flush=True)
        print(f"{mode}: {len(files)} files in {wall:.1f} s", flush=True)
    if getattr(args, "compare_set", None):
        report["compare"] = compare_eval(args, conditions, files, by_mode)
    if getattr(args, "oracle", 0):
        report["oracle"] = oracle_eval(args, conditions, files, args.oracle)
    shifts = [float(x) for x in args.shift_ms.split(",") if x.strip()] if args.shift_ms else []
    if shifts:
        report["shift"] = shift_eval(args, conditions, files, by_mode, shifts)
    return report


def engine_readings(args, mode: str, files: list[str], n: int) -> dict[str, list[list[tuple[str, float]]]]:
    """{realpath: [readings of each segment]} of one `sluice transcribe --decoder.alternatives=N`:
    each segment's alternatives as (text, confidence), best first (its own text, confidence 1,
    when it lists none)."""
    docs, _ = run_transcribe(args, mode, files, (f"--decoder.alternatives={n}",))
    out = {}
    for d in docs:
        segs = [s for c in d["channels"] for s in c["segments"]]
        out[os.path.realpath(d["file"])] = [[(a["text"], a["confidence"]) for a in s.get("alternatives", [])]
                                            or [(s["text"], 1.0)] for s in segs if s["text"]]
    return out


def oracle_hyp(readings: list[list[str]], ref: str) -> str:
    """The text nearest `ref` (word edit distance) that picks one reading per segment: each
    segment's choice in turn, the others held at their current one (their best to start), two
    passes. Exact for one segment, the common case of the held-out sets."""
    choice = [0] * len(readings)

    def text(ch):
        return " ".join(r[c] for r, c in zip(readings, ch) if r[c])
    for _ in range(2):
        for i, r in enumerate(readings):
            best = min(range(len(r)), key=lambda k: (ctc_metrics.edit_distance(
                text(choice[:i] + [k] + choice[i + 1:]).split(), ref.split()), k))
            choice[i] = best
    return text(choice)


def oracle_eval(args, conditions: dict, files: list[str], n: int) -> dict:
    """Per condition and mode, the WER of the best of each segment's n best readings against the
    reference (the n-best oracle): how far a perfect rescoring of what the decoder keeps could go.
    Also, over the utterances decoded as one segment, how well the best reading's confidence
    tells whether it is exactly right: the mean confidence against the share exactly right, and
    the Brier score (mean squared gap between confidence and right = 1 / wrong = 0)."""
    out = {"n": n, "conditions": {}}
    for mode in args.decoders.split(","):
        readings = engine_readings(args, mode, files, n)
        for cond, items in conditions.items():
            rates = ctc_metrics.ErrorRates()
            listed = 0
            conf, right = [], []
            for wav, ref in items:
                r = readings.get(wav, [])
                listed += sum(len(x) for x in r)
                rates.add(oracle_hyp([[t for t, _ in x] for x in r], ref) if r else "", ref)
                if len(r) == 1:
                    conf.append(r[0][0][1])
                    right.append(1.0 if r[0][0][0] == ref else 0.0)
            res = {"utts": len(items), "oracle_cer": rates.cer(), "oracle_wer": rates.wer(), "readings": listed}
            if conf:
                res.update({"one_segment": len(conf), "mean_confidence": sum(conf) / len(conf),
                            "exactly_right": sum(right) / len(right),
                            "brier": sum((c - y) ** 2 for c, y in zip(conf, right)) / len(conf)})
            out["conditions"][cond + "/" + mode] = res
            print(f"{cond} {mode}: {n}-best oracle CER {rates.cer():.3f} WER {rates.wer():.3f} ({listed} readings)"
                  + (f"; best reading: confidence {res['mean_confidence']:.3f}, exactly right {res['exactly_right']:.3f}, "
                     f"Brier {res['brier']:.3f} ({len(conf)} one-segment utterances)" if conf else ""), flush=True)
    return out


def compare_eval(args, conditions: dict, files: list[str], by_mode: dict) -> dict:
    """Every file decoded again with --compare-set added, per mode: that run's CER/WER, and how
    many characters of the first run's text it changes (character edit distance between the two
    texts over the first text's characters, spaces included)."""
    import copy
    other = copy.copy(args)
    other.set = list(getattr(args, "set", None) or []) + list(args.compare_set)
    out = {"set": list(args.compare_set), "conditions": {}}
    for mode, base in by_mode.items():
        hyps, wall = engine_transcribe(other, mode, files)
        out.setdefault("wall_s", {})[mode] = round(wall, 2)
        total_changed = total_chars = 0
        for cond, items in conditions.items():
            rates = ctc_metrics.ErrorRates()
            changed = chars = 0
            for wav, ref in items:
                rates.add(hyps.get(wav, ""), ref)
                a, b = base.get(wav, ""), hyps.get(wav, "")
                changed += ctc_metrics.edit_distance(list(a), list(b))
                chars += len(a)
            total_changed += changed
            total_chars += chars
            out["conditions"][cond + "/" + mode] = {"utts": len(items), "cer": rates.cer(), "wer": rates.wer(),
                                                    "changed_chars": changed, "base_chars": chars,
                                                    "changed_share": changed / max(chars, 1)}
            print(f"{cond} {mode} with {' '.join(args.compare_set)}: CER {rates.cer():.3f} WER {rates.wer():.3f}, "
                  f"text changed {changed} of {chars} characters ({100.0 * changed / max(chars, 1):.2f}%)",
                  flush=True)
        out.setdefault("changed_share", {})[mode] = total_changed / max(total_chars, 1)
        print(f"{mode} with {' '.join(args.compare_set)}: {len(files)} files in {wall:.1f} s; text changed "
              f"{total_changed} of {total_chars} characters ({100.0 * total_changed / max(total_chars, 1):.2f}%)",
              flush=True)
    return out


def run_transcribe(args, mode: str, files: list[str], extra: tuple[str, ...] = ()) -> tuple[list[dict], float]:
    """The JSON documents of one `sluice transcribe --decoder.mode=MODE` over `files` (with the
    `extra` options and --set overrides), and its wall time."""
    import subprocess
    import time
    # No load shedding: an evaluation waits for every file however busy the machine is. No
    # redaction: it writes spoken digit runs as "[card]" or "[account]" in the lexical text too,
    # which is masking, not recognition (until session 30 it was on here, and 5-10% of the
    # synthetic sets' utterances, the ones with card, PIN or zip code digits, lost those words).
    cmd = [args.engine, "transcribe", "--model.dir=" + args.model_dir, "--decoder.mode=" + mode,
           "--engine.max_queue_wait_ms=600000", "--postproc.redact=false", *extra, "--format", "json"] + [
               "--" + kv for kv in getattr(args, "set", None) or []] + files
    t0 = time.monotonic()
    run = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if run.returncode != 0:
        raise SystemExit(f"{args.engine} transcribe --decoder.mode={mode} {' '.join(extra)} over {len(files)} files "
                         f"failed (status {run.returncode}):\n{run.stderr[-3000:]}")
    return read_json_stream(run.stdout), wall


def engine_transcribe(args, mode: str, files: list[str]) -> tuple[dict[str, str], float]:
    """{realpath: text} of one `sluice transcribe --decoder.mode=MODE` over `files`, and its wall time."""
    docs, wall = run_transcribe(args, mode, files)
    hyps = {os.path.realpath(d["file"]): " ".join(s["text"] for c in d["channels"] for s in c["segments"]
                                                  if s["text"])
            for d in docs}
    return hyps, wall


def shifted_copy(src: str, dst: str, ms: float) -> None:
    """`src` with `ms` milliseconds of digital silence in front (sox pad), same format."""
    import subprocess
    subprocess.run(["sox", "-V1", src, dst, "pad", f"{ms / 1000:.6f}", "0"], check=True)


def shift_eval(args, conditions: dict, files: list[str], by_mode: dict, shifts: list[float]) -> dict:
    """The same audio a few ms later, as a codec, resampler or jitter buffer delays it: each file
    again with `ms` of silence in front, decoded by the engine with --shift-decoder. Per condition
    and delay: WER against the reference, and how much the text moved against the undelayed
    text (WER of the delayed text taking the undelayed one as reference, and the share of
    utterances whose text changed at all). The recogniser frames audio every 10 ms and
    subsamples x4, so delays below 40 ms show the model other phases of the same speech."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    mode = args.shift_decoder
    if mode not in by_mode:
        by_mode[mode], _ = engine_transcribe(args, mode, files)
    base = by_mode[mode]
    out: dict = {"decoder": mode, "delays_ms": shifts, "conditions": {}}
    with tempfile.TemporaryDirectory(prefix="sluice-shift-") as tmp:
        for ms in shifts:
            copies = {f: os.path.join(tmp, f"{i:06d}.wav") for i, f in enumerate(files)}
            with ThreadPoolExecutor(max_workers=max(1, args.threads)) as pool:
                list(pool.map(lambda f: shifted_copy(f, copies[f], ms), files))
            got, _ = engine_transcribe(args, mode, list(copies.values()))
            hyps = {f: got.get(os.path.realpath(copies[f]), "") for f in files}
            for cond, items in conditions.items():
                vs_ref, vs_base = ctc_metrics.ErrorRates(), ctc_metrics.ErrorRates()
                changed = 0
                for wav, ref in items:
                    vs_ref.add(hyps[wav], ref)
                    vs_base.add(hyps[wav], base.get(wav, ""))
                    changed += hyps[wav].split() != base.get(wav, "").split()
                r = {"utts": len(items), "wer": vs_ref.wer(), "wer_vs_undelayed": vs_base.wer(),
                     "changed_utts": changed / max(1, len(items))}
                out["conditions"].setdefault(cond, {})[f"{ms:g}"] = r
                print(f"{cond} {mode} {ms:g} ms later: WER {r['wer']:.3f}, moved {r['wer_vs_undelayed']:.3f} "
                      f"of the undelayed words, {r['changed_utts']:.2f} of utterances changed", flush=True)
            for p in copies.values():
                os.remove(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--ckpt", help="a train.py checkpoint")
    src.add_argument("--model-dir", help="an exported model directory (export.py)")
    ap.add_argument("--engine", default="", help="the sluice binary: evaluate the C++ engine's decoders")
    ap.add_argument("--decoders", default="greedy,beam,lexicon")
    ap.add_argument("--splits", default=",".join(SPLITS), help="comma-separated conditions")
    ap.add_argument("--all-asterisk", action="store_true",
                    help="also every asterisk prompt (real_asterisk; see above)")
    ap.add_argument("--data", default="data")
    ap.add_argument("--json", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-utts", type=int, default=400)
    ap.add_argument("--shift-ms", default="",
                    help="with --engine: also decode every file this many ms later (comma-separated, "
                         "e.g. 2.5,5,7.5,20) and report how far the text moves (see shift_eval)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="with --engine: a config override for sluice (repeatable), e.g. "
                         "decoder.lexicon_lm_weight=1.0")
    ap.add_argument("--manifest", action="append", default=[], metavar="NAME=TSV",
                    help="with --engine: the rows marked test of an extractor's manifest as condition NAME")
    ap.add_argument("--shift-decoder", default="lexicon", help="decoder mode of the --shift-ms runs")
    ap.add_argument("--oracle", type=int, default=0, metavar="N",
                    help="with --engine: also decode with decoder.alternatives=N and report the WER of "
                         "the best of each segment's N readings (the n-best oracle)")
    ap.add_argument("--compare-set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="with --engine: decode every file again with these overrides added (repeatable, "
                         "e.g. model.math=bf16) and report its CER/WER and the share of characters its "
                         "text changes against the first run's (edit distance / first run's characters)")
    args = ap.parse_args()
    if args.compare_set and not args.engine:
        ap.error("--compare-set needs --engine")
    if args.oracle and not args.engine:
        ap.error("--oracle needs --engine")
    if args.manifest and not args.engine:
        ap.error("--manifest needs --engine")
    if args.engine:
        if not args.model_dir:
            args.model_dir = "models/default"
        report = engine_eval(args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
        return
    if not args.ckpt and not args.model_dir:
        ap.error("give --ckpt or --model-dir (or --engine)")
    torch.set_num_threads(args.threads)
    if args.ckpt:
        ck = torch.load(args.ckpt, map_location="cpu", weights_only=False)  # our own checkpoint (torch >= 2.6 defaults to True)
        tokens = dataset.Units.from_checkpoint(ck)
        model = AcousticModel(ModelConfig.from_json(ck["config"]))
        model.load_state_dict(ck["model"])
        report: dict = {"checkpoint": args.ckpt, "step": ck["state"]["step"], "epoch": ck["state"]["epoch"],
                        "train_hours": ck["state"]["elapsed_s"] / 3600, "conditions": {}}
    else:
        from train import load_model_dir
        model = load_model_dir(args.model_dir)
        tokens = dataset.Units.from_model_dir(args.model_dir)
        report = {"model_dir": args.model_dir, "conditions": {}}
    report["units"] = tokens.kind
    model.eval()
    words = load_word_list()
    loads = [torch.zeros(model.cfg.n_routed) for _ in model.moe_layers()]
    for split in [s for s in args.splits.split(",") if s]:
        fs = dataset.FeatureSet(args.data, split, tokens, max_seconds=60)
        items = [(fs.feats(u), u["text"]) for u in fs.utts[: args.max_utts]]
        if items:
            report["conditions"][split] = score(model, items, tokens, loads, words)
            print(split, json.dumps({k: v for k, v in report["conditions"][split].items() if k != "samples"}), flush=True)
    real = asterisk_set(tokens) if args.all_asterisk else []
    if real:
        report["conditions"]["real_asterisk"] = score(model, [(fb, t) for _, fb, t in real], tokens, loads,
                                                      words)
        print("real_asterisk", json.dumps({k: v for k, v in report["conditions"]["real_asterisk"].items()
                                           if k != "samples"}), flush=True)
    report["balance_max_mean"] = [round(b, 3) for b in ctc_metrics.balance_max_mean(loads)]
    report["params"] = dict(zip(("total", "active"), model.param_counts()))
    print("balance max/mean per layer:", report["balance_max_mean"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
