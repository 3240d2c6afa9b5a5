"""Train, evaluate and export the punctuation and casing model (CPU, one thread).

  /usr/bin/python3 tools/train/train_punct.py train --out runs/punct --minutes 25
  /usr/bin/python3 tools/train/train_punct.py finish --out runs/punct \
      --export models/punct --golden tests/data/punct/golden.txt

`train` checkpoints every epoch (runs/punct/last.pt, best dev model in best.pt) and resumes from
last.pt when started again; its learning rate decays linearly over the time budget. `finish`
scores the best model on the test split (per-class precision/recall/F1, per source) into
metrics.json, exports it and writes the golden logits the C++ test compares against.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import punct_data as pd  # noqa: E402
import punct_model as pm  # noqa: E402

GRAMMAR_DOCS, GRAMMAR_SEED = 16000, 13
MAX_VOCAB, MIN_COUNT = 8000, 2
MAX_CHUNK = 64          # words per training/eval sequence at most (cut at sentence ends)
JOIN_P = 0.3            # share of training sequences that join two chunks (a boundary inside)
WORD_DROPOUT = 0.02     # known words replaced by <unk> in training, so <unk> is learnt
BATCH = 32
LR, LR_FLOOR = 2e-3, 0.05
CLASSES = ((".", pd.MARK_PERIOD), (",", pd.MARK_COMMA), ("?", pd.MARK_QUESTION))

# Fixed inputs for the C++ equivalence test: call-center and general text, an unknown word,
# one word, and a sequence longer than every receptive field.
GOLDEN_INPUTS = [
    "what is your account number",
    "hello thank you for calling my name is sarah how can i help you today",
    "i was charged twice for the same order can you check that for me",
    "zzqxv",
    "the quick brown fox jumps over the lazy dog and then it runs away into the forest "
    "where nobody can find it again because the trees are tall and the night is dark",
]


def load_corpus() -> dict[str, list[tuple]]:
    splits: dict[str, list[tuple]] = {"train": [], "dev": [], "test": []}
    sources = [("fortune", pd.fortune_documents()), ("asterisk", pd.asterisk_documents()),
               ("grammar", pd.grammar_documents(GRAMMAR_DOCS, GRAMMAR_SEED))]
    for name, docs in sources:
        for split, items in pd.labelled(docs, name).items():
            splits[split] += items
    return splits


def build_vocab(train: list[tuple]) -> list[str]:
    counts = collections.Counter(w for doc in train for w in doc[0])
    words = sorted((w for w, c in counts.items() if c >= MIN_COUNT), key=lambda w: (-counts[w], w))
    return list(pm.SPECIALS) + words[:MAX_VOCAB - len(pm.SPECIALS)]


def chunks(doc: tuple) -> list[tuple]:
    """A document cut into sequences of at most MAX_CHUNK words, at sentence ends when possible."""
    words, caps, marks, source = doc
    out, start = [], 0
    while start < len(words):
        end = min(start + MAX_CHUNK, len(words))
        if end < len(words):
            cut = max((i + 1 for i in range(start, end)
                       if marks[i] in (pd.MARK_PERIOD, pd.MARK_QUESTION)), default=end)
            end = cut
        out.append((words[start:end], caps[start:end], marks[start:end], source))
        start = end
    return out


def tensors(seqs: list[tuple], index: dict[str, int], rng: random.Random | None):
    n = max(len(s[0]) for s in seqs) + 2
    ids = torch.zeros(len(seqs), n, dtype=torch.long)
    mask = torch.zeros(len(seqs), n)
    cap = torch.zeros(len(seqs), n)
    mark = torch.full((len(seqs), n), -100, dtype=torch.long)
    for b, (words, caps, marks, _) in enumerate(seqs):
        enc = pm.encode(words, index)
        if rng is not None:
            enc = [pm.UNK if i > pm.EOS and rng.random() < WORD_DROPOUT else i for i in enc]
        ids[b, :len(enc)] = torch.tensor(enc)
        mask[b, :len(enc)] = 1
        cap[b, 1:len(words) + 1] = torch.tensor(caps, dtype=torch.float)
        mark[b, 1:len(words) + 1] = torch.tensor(marks)
    return ids, mask, cap, mark


def batches(seqs: list[tuple], rng: random.Random | None):
    """Batches of similar length (shuffled when rng is given)."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i][0]))
    groups = [order[i:i + BATCH] for i in range(0, len(order), BATCH)]
    if rng is not None:
        rng.shuffle(groups)
    for g in groups:
        yield [seqs[i] for i in g]


def training_sequences(train_chunks: list[tuple], rng: random.Random) -> list[tuple]:
    shuffled = train_chunks[:]
    rng.shuffle(shuffled)
    out, i = [], 0
    while i < len(shuffled):
        a = shuffled[i]
        if i + 1 < len(shuffled) and rng.random() < JOIN_P:
            b = shuffled[i + 1]
            out.append((a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3]))
            i += 2
        else:
            out.append(a)
            i += 1
    return out


def evaluate(model, seqs: list[tuple], index: dict[str, int]) -> dict:
    """Per-class precision/recall/F1 for . , ? and capitalization, overall and per source."""
    was_training = model.training
    model.eval()
    tallies: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    with torch.no_grad():
        for batch in batches(seqs, None):
            ids, mask, cap, mark = tensors(batch, index, None)
            logits = model(ids, mask)
            pcap = (logits[..., 0] > 0).long()
            pmark = logits[..., 1:].argmax(-1)
            for b, s in enumerate(batch):
                n = len(s[0])
                for key in ("all", s[3]):
                    t = tallies[key]
                    for j in range(1, n + 1):
                        gm, pmk = int(mark[b, j]), int(pmark[b, j])
                        t["words"] += 1
                        t["mark_ok"] += gm == pmk
                        for name, c in CLASSES:
                            t[name + "tp"] += gm == c and pmk == c
                            t[name + "fp"] += gm != c and pmk == c
                            t[name + "fn"] += gm == c and pmk != c
                        gc, pc = int(cap[b, j]), int(pcap[b, j])
                        t["Ctp"] += gc == 1 and pc == 1
                        t["Cfp"] += gc == 0 and pc == 1
                        t["Cfn"] += gc == 1 and pc == 0
                        t["cap_ok"] += gc == pc
                        # Capitals the display rules cannot give: not a sentence start, not "i".
                        start = j == 1 or int(mark[b, j - 1]) in (pd.MARK_PERIOD, pd.MARK_QUESTION)
                        w = s[0][j - 1]
                        if gc == 1 and not start and w != "i" and not w.startswith("i'"):
                            t["inner_cap_n"] += 1
                            t["inner_cap_ok"] += pc == 1
                    # The mark after the last word of a sequence (a final's last word).
                    gm, pmk = int(mark[b, n]), int(pmark[b, n])
                    for name, c in CLASSES:
                        if gm == c:
                            t["end" + name + "n"] += 1
                            t["end" + name + "ok"] += pmk == c
    model.train(was_training)
    report = {}
    for key, t in tallies.items():
        r = {"words": t["words"], "mark_accuracy": t["mark_ok"] / t["words"],
             "cap_accuracy": t["cap_ok"] / t["words"],
             "inner_capitalize_recall": round(t["inner_cap_ok"] / max(t["inner_cap_n"], 1), 4),
             "inner_capitalize_support": t["inner_cap_n"]}
        for name, _ in CLASSES:
            r["end_recall" + name] = round(t["end" + name + "ok"] / max(t["end" + name + "n"], 1), 4)
            r["end_support" + name] = t["end" + name + "n"]
        for name in [c[0] for c in CLASSES] + ["C"]:
            tp, fp, fn = t[name + "tp"], t[name + "fp"], t[name + "fn"]
            p = tp / (tp + fp) if tp + fp else 0.0
            rc = tp / (tp + fn) if tp + fn else 0.0
            f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
            r["capitalize" if name == "C" else name] = {
                "precision": round(p, 4), "recall": round(rc, 4), "f1": round(f1, 4),
                "support": tp + fn}
        report[key] = r
    return report


def score(report: dict) -> float:
    a = report["all"]
    return (a["."]["f1"] + a[","]["f1"] + a["?"]["f1"] + a["capitalize"]["f1"]) / 4


def cmd_train(args) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    data = load_corpus()
    vocab = build_vocab(data["train"])
    index = {w: i for i, w in enumerate(vocab)}
    train_chunks = [c for d in data["train"] for c in chunks(d)]
    dev = [c for d in data["dev"] for c in chunks(d)]
    print(f"train {len(data['train'])} docs {sum(len(c[0]) for c in train_chunks)} words; "
          f"dev {len(data['dev'])} docs; test {len(data['test'])} docs; vocab {len(vocab)}",
          flush=True)
    model = pm.Punctuator(len(vocab))
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    state = {"elapsed": 0.0, "epoch": 0, "best": -1.0}
    last = os.path.join(args.out, "last.pt")
    if os.path.exists(last):
        ck = torch.load(last)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        state = ck["state"]
        print(f"resumed at epoch {state['epoch']}, {state['elapsed']:.0f} s", flush=True)
    budget = args.minutes * 60.0
    rng = random.Random(state["epoch"])
    while state["elapsed"] < budget:
        t0 = time.time()
        total, n = 0.0, 0
        for batch in batches(training_sequences(train_chunks, rng), rng):
            frac = min(1.0, (state["elapsed"] + time.time() - t0) / budget)
            for g in opt.param_groups:
                g["lr"] = LR * max(LR_FLOOR, 1.0 - frac)
            ids, mask, cap, mark = tensors(batch, index, rng)
            logits = model(ids, mask)
            sel = mark != -100
            loss = (F.binary_cross_entropy_with_logits(logits[..., 0][sel], cap[sel])
                    + F.cross_entropy(logits[..., 1:][sel], mark[sel]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss)
            n += 1
            if state["elapsed"] + time.time() - t0 > budget:
                break
        state["elapsed"] += time.time() - t0
        state["epoch"] += 1
        rep = evaluate(model, dev, index)
        s = score(rep)
        a = rep["all"]
        print(f"epoch {state['epoch']} {state['elapsed']:.0f}s loss {total / max(n, 1):.4f} "
              f"dev . {a['.']['f1']:.3f} , {a[',']['f1']:.3f} ? {a['?']['f1']:.3f} "
              f"cap {a['capitalize']['f1']:.3f} mean {s:.4f}", flush=True)
        if s > state["best"]:
            state["best"] = s
            torch.save({"model": model.state_dict(), "vocab": vocab, "dev": rep,
                        "epoch": state["epoch"]}, os.path.join(args.out, "best.pt"))
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": state},
                   last + ".tmp")
        os.replace(last + ".tmp", last)
    print("done", flush=True)


def binomial_floor(n: int, p: float, risk: float = 0.01) -> int:
    """The largest k with P(Binomial(n, p) < k) <= risk: how many of n independent trials a model
    with success rate p gets right, except once in 1/risk times."""
    from math import comb
    k, below = 0, 0.0
    while k < n:
        below_next = below + comb(n, k) * p ** k * (1 - p) ** (n - k)   # P(X <= k) = P(X < k+1)
        if below_next > risk:
            break
        below, k = below_next, k + 1
    return k


def behaviour_thresholds(test_all: dict) -> dict:
    """Thresholds of tests/moe/punct_behaviour_test.cpp from the held-out test numbers."""
    return {"questions_of_10": binomial_floor(10, test_all["end_recall?"]),
            "statements_of_10": binomial_floor(10, test_all["end_recall."]),
            "names_of_9": binomial_floor(9, test_all["inner_capitalize_recall"])}


def cmd_finish(args) -> None:
    torch.set_num_threads(1)
    ck = torch.load(os.path.join(args.out, "best.pt"))
    vocab = ck["vocab"]
    index = {w: i for i, w in enumerate(vocab)}
    model = pm.Punctuator(len(vocab))
    model.load_state_dict(ck["model"])
    model.eval()
    data = load_corpus()
    test = [c for d in data["test"] for c in chunks(d)]
    rep = {"epoch": ck["epoch"], "dev": ck["dev"], "test": evaluate(model, test, index)}
    rep["behaviour_thresholds"] = behaviour_thresholds(rep["test"]["all"])
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(rep, f, indent=1)
    print(json.dumps(rep["test"], indent=1))
    os.makedirs(args.export, exist_ok=True)
    pm.export(model, vocab, os.path.join(args.export, "punct.bin"),
              os.path.join(args.export, "vocab.txt"))
    with open(os.path.join(args.export, "metrics.json"), "w") as f:
        json.dump(rep, f, indent=1)
    os.makedirs(os.path.dirname(args.golden), exist_ok=True)
    model.eval()   # no dropout: the golden logits are the deterministic model the C++ runs
    with torch.no_grad(), open(args.golden, "w") as f:
        f.write("# sluice punct golden logits (tools/train/train_punct.py finish): per case a\n"
                "# 'words:' line, then per word: capitalize, none, '.', ',', '?' logits\n")
        for text in GOLDEN_INPUTS:
            words = text.split()
            ids = torch.tensor([pm.encode(words, index)])
            logits = model(ids, torch.ones_like(ids))[0, 1:-1]
            f.write("words: " + text + "\n")
            for row in logits.tolist():
                f.write(" ".join(f"{v:.7g}" for v in row) + "\n")
    print(f"exported {args.export}, golden {args.golden}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--minutes", type=float, default=25.0)
    f = sub.add_parser("finish")
    f.add_argument("--out", required=True)
    f.add_argument("--export", required=True)
    f.add_argument("--golden", required=True)
    args = ap.parse_args()
    {"train": cmd_train, "finish": cmd_finish}[args.cmd](args)


if __name__ == "__main__":
    main()
