#!/usr/bin/python3
"""Build a word n-gram LM (ARPA) with interpolated modified Kneser-Ney smoothing, count-pruned.

  /usr/bin/python3 tools/train/build_lm.py --corpus data/text/lm_corpus.txt --out data/lm/kn3.arpa

Input: one sentence per line, lowercase words separated by spaces (the transcript form of
text_norm.py). Each sentence is scored as <s> words </s>. The vocabulary is every word of the
corpus plus </s> and <unk>; <s> is only a history (log10 probability -99).

Smoothing (Chen & Goodman's interpolated modified Kneser-Ney, as KenLM's lmplz does it):
  - the highest order counts n-grams; a lower order n-gram counts the distinct words seen just
    before it (its continuation count), except n-grams starting with <s>, which keep their count;
  - every order has three discounts D1, D2, D3+ from its counts-of-counts t1..t4:
      Y = t1 / (t1 + 2 t2),  Dk = k - (k + 1) Y t(k+1) / tk;
    where the corpus is too small for that formula to give 0 < Dk < k, a fixed fallback is used;
  - p(w | h) = (a(h w) - D(a(h w))) / a(h .) + gamma(h) p(w | h minus its first word), with
    gamma(h) = (D1 N1(h .) + D2 N2(h .) + D3+ N3+(h .)) / a(h .); the unigrams interpolate with the
    uniform distribution over the vocabulary (which is what <unk> gets).
Pruning: an n-gram (order >= 2) seen at most --prune[n] times is dropped, unless a kept higher
n-gram needs it as its prefix or suffix. The probabilities that stay are the smoothed ones; every
history's backoff weight is then recomputed so that its distribution sums to 1 again:
  bo(h) = (1 - sum_kept p(w | h)) / (1 - sum_kept p(w | h minus its first word)).
Same corpus and arguments -> same bytes.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict

BOS = "<s>"
EOS = "</s>"
UNK = "<unk>"
BOS_LOG10_PROB = -99.0          # ARPA's convention for "never predicted"
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)  # D1, D2, D3+ when the counts-of-counts cannot give them
MIN_MASS = 1e-12                # below this, a backoff denominator counts as empty
PROB_DIGITS = 7                 # significant digits written for log10 values


def read_sentences(path: str):
    """Yields each non-empty line's words."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if words:
                yield words


def count_ngrams(sentences, order: int) -> list[dict]:
    """raw[n][ngram tuple] = times seen, n = 1..order (raw[0] unused); sentences padded <s> .. </s>."""
    raw = [defaultdict(int) for _ in range(order + 1)]
    for words in sentences:
        toks = [BOS] + words + [EOS]
        for n in range(1, order + 1):
            table = raw[n]
            for i in range(len(toks) - n + 1):
                table[tuple(toks[i:i + n])] += 1
    raw[1].pop((BOS,), None)  # <s> is never predicted
    return [dict(t) for t in raw]


def adjusted_counts(raw: list[dict], order: int) -> list[dict]:
    """Kneser-Ney counts: raw counts at the highest order and for n-grams starting with <s>,
    continuation counts (distinct left neighbours) below."""
    adj = [dict() for _ in range(order + 1)]
    adj[order] = dict(raw[order])
    for n in range(order - 1, 0, -1):
        cont = defaultdict(int)
        for g in raw[n + 1]:
            cont[g[1:]] += 1
        table = {}
        for g, c in raw[n].items():
            table[g] = c if g[0] == BOS else cont[g]
        adj[n] = table
    return adj


def discounts(counts_of_counts: tuple[int, int, int, int]) -> tuple[float, float, float]:
    """Modified Kneser-Ney discounts (D1, D2, D3+) from t1..t4; falls back per discount where the
    estimate is undefined or outside (0, k)."""
    t1, t2, t3, t4 = counts_of_counts
    out = []
    for k, (tk, tk1) in enumerate(((t1, t2), (t2, t3), (t3, t4)), start=1):
        d = None
        if t1 > 0 and tk > 0 and t1 + 2 * t2 > 0:
            y = t1 / (t1 + 2 * t2)
            d = k - (k + 1) * y * tk1 / tk
        if d is None or not (0.0 < d < k):
            d = FALLBACK_DISCOUNTS[k - 1]
        out.append(d)
    return tuple(out)


def counts_of_counts(table: dict) -> tuple[int, int, int, int]:
    t = [0, 0, 0, 0]
    for c in table.values():
        if 1 <= c <= 4:
            t[c - 1] += 1
    return tuple(t)


def smooth(adj: list[dict], order: int) -> tuple[list[dict], set]:
    """Interpolated modified Kneser-Ney: prob[n][ngram] = p(last word | the others) for every seen
    n-gram, and for every unigram of the vocabulary."""
    vocab = {g[0] for g in adj[1]} | {EOS, UNK}
    prob = [dict() for _ in range(order + 1)]
    for n in range(1, order + 1):
        d = discounts(counts_of_counts(adj[n]))
        # Per history: total count and the discount mass it frees (gamma's numerator).
        total = defaultdict(float)
        freed = defaultdict(float)
        for g, a in adj[n].items():
            h = g[:-1]
            total[h] += a
            freed[h] += d[min(a, 3) - 1]
        for g, a in adj[n].items():
            h = g[:-1]
            gamma = freed[h] / total[h]
            lower = 1.0 / len(vocab) if n == 1 else prob[n - 1][g[1:]]
            prob[n][g] = (a - d[min(a, 3) - 1]) / total[h] + gamma * lower
        if n == 1:
            gamma = freed[()] / total[()]
            for w in vocab:
                prob[1].setdefault((w,), gamma / len(vocab))
    return prob, vocab


def prune(raw: list[dict], prob: list[dict], order: int, thresholds: list[int]) -> list[set]:
    """kept[n]: the n-grams that stay. Top-down, so prefixes and suffixes of kept n-grams stay."""
    kept = [set() for _ in range(order + 1)]
    kept[1] = set(prob[1])
    for n in range(order, 1, -1):
        keep = {g for g, c in raw[n].items() if c > thresholds[n - 1]}
        if n < order:
            for g in kept[n + 1]:
                keep.add(g[:-1])
                keep.add(g[1:])
        kept[n] = keep
    return kept


def backoffs(prob: list[dict], kept: list[set], order: int) -> list[dict]:
    """bo[n][history] for every kept history of order n < order that has kept extensions."""
    kept_sum = [defaultdict(float) for _ in range(order + 1)]
    lower_sum = [defaultdict(float) for _ in range(order + 1)]
    for n in range(2, order + 1):
        for g in kept[n]:
            kept_sum[n - 1][g[:-1]] += prob[n][g]
            lower_sum[n - 1][g[:-1]] += prob[n - 1][g[1:]]
    bo = [dict() for _ in range(order + 1)]
    for n in range(1, order):
        for h, s in kept_sum[n].items():
            num = max(1.0 - s, MIN_MASS)
            den = max(1.0 - lower_sum[n][h], MIN_MASS)
            bo[n][h] = num / den
    return bo


def fmt(x: float) -> str:
    return f"{x:.{PROB_DIGITS}g}"


def write_arpa(path: str, prob: list[dict], kept: list[set], bo: list[dict], order: int) -> None:
    lines_by_order = []
    for n in range(1, order + 1):
        lines = []
        grams = sorted(kept[n]) if n > 1 else sorted(kept[1] | {(BOS,)})
        for g in grams:
            lp = BOS_LOG10_PROB if g == (BOS,) else math.log10(prob[n][g])
            line = f"{fmt(lp)}\t{' '.join(g)}"
            if n < order and g in bo[n]:
                line += f"\t{fmt(math.log10(bo[n][g]))}"
            lines.append(line)
        lines_by_order.append(lines)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\\data\\\n")
        for n, lines in enumerate(lines_by_order, start=1):
            f.write(f"ngram {n}={len(lines)}\n")
        for n, lines in enumerate(lines_by_order, start=1):
            f.write(f"\n\\{n}-grams:\n")
            f.write("\n".join(lines))
            f.write("\n")
        f.write("\n\\end\\\n")


def build(corpus: str, out: str, order: int, thresholds: list[int]) -> dict:
    raw = count_ngrams(read_sentences(corpus), order)
    if not raw[1]:
        raise ValueError(f"{corpus}: no words")
    adj = adjusted_counts(raw, order)
    prob, _ = smooth(adj, order)
    kept = prune(raw, prob, order, thresholds)
    bo = backoffs(prob, kept, order)
    write_arpa(out, prob, kept, bo, order)
    return {"ngrams": [len(kept[n]) + (1 if n == 1 else 0) for n in range(1, order + 1)],
            "seen": [len(raw[n]) for n in range(1, order + 1)]}


def parse_thresholds(text: str, order: int) -> list[int]:
    vals = [int(x) for x in text.split(",")]
    if len(vals) != order or vals[0] != 0 or any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError(
            f"--prune needs {order} comma-separated counts >= 0, the first (unigrams) 0")
    return vals


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="text, one sentence per line")
    p.add_argument("--out", required=True, help="ARPA file to write")
    p.add_argument("--order", type=int, default=3)
    p.add_argument("--prune", default=None,
                   help="per order n: drop n-grams seen at most this often (default 0,0,1: no "
                        "singleton trigrams)")
    args = p.parse_args(argv)
    if args.order < 1:
        p.error("--order must be at least 1")
    default = ",".join(["0"] * min(args.order, 2) + ["1"] * max(args.order - 2, 0))
    try:
        thresholds = parse_thresholds(args.prune or default, args.order)
    except (ValueError, argparse.ArgumentTypeError) as e:
        p.error(str(e))
    try:
        stats = build(args.corpus, args.out, args.order, thresholds)
    except (OSError, ValueError) as e:
        print(f"build_lm: {e}", file=sys.stderr)
        return 1
    print(f"build_lm: {args.out}: n-grams kept {stats['ngrams']} of seen {stats['seen']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
