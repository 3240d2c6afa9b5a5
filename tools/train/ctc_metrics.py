"""Greedy CTC decoding and edit distance, for dev/test scoring in the recipe."""
from __future__ import annotations

import torch

from dataset import SPACE


def ids_to_text(ids, tokens) -> str:
    """Text of token ids; tokens: a chars token list or a dataset.Units (chars or pieces)."""
    if isinstance(tokens, list):
        return "".join(" " if tokens[i] == SPACE else tokens[i] for i in ids)
    return tokens.decode(ids)


def greedy_decode(logits: torch.Tensor, lengths: torch.Tensor, tokens) -> list[str]:
    """Best path: argmax per frame, merge repeats, drop blanks (id 0). tokens: a chars token
    list or a dataset.Units."""
    best = logits.argmax(-1)
    out = []
    for b in range(best.shape[0]):
        seq, prev = [], -1
        for i in best[b, : int(lengths[b])].tolist():
            if i != prev and i != 0:
                seq.append(i)
            prev = i
        out.append(" ".join(ids_to_text(seq, tokens).split()))
    return out


def targets_to_text(targets: torch.Tensor, lengths: torch.Tensor, tokens) -> list[str]:
    return [ids_to_text(targets[b, : int(lengths[b])].tolist(), tokens) for b in range(targets.shape[0])]


def edit_distance(a: list, b: list) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


class ErrorRates:
    """Character and word error counts accumulated over (hypothesis, reference) pairs."""

    def __init__(self) -> None:
        self.char_errors = self.chars = self.word_errors = self.words = 0

    def add(self, hyp: str, ref: str) -> None:
        self.char_errors += edit_distance(list(hyp), list(ref))
        self.chars += len(ref)
        self.word_errors += edit_distance(hyp.split(), ref.split())
        self.words += len(ref.split())

    def cer(self) -> float:
        return self.char_errors / max(1, self.chars)

    def wer(self) -> float:
        return self.word_errors / max(1, self.words)


def balance_max_mean(loads: list[torch.Tensor]) -> list[float]:
    """Expert load balance per layer: max / mean tokens per routed expert."""
    return [float(l.max() / l.mean().clamp_min(1e-9)) for l in loads]
