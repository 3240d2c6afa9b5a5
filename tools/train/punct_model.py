"""The punctuation and casing model (PyTorch) and its export to models/punct/.

Token classifier over lowercase words: embedding → a stack of 1-D convolutions (kernel K, the
dilations below, ReLU, residual from the second layer on) → per word 5 logits:
[capitalize, mark none, mark '.', mark ',', mark '?']. Every sequence is wrapped in <s> … </s> so
the model sees where the input starts and ends (a final usually ends a sentence). Positions beyond
a sequence are zero at every layer's input, which is exactly zero padding of one sequence: the C++
inference (moe/punct/) runs one sequence with zero padding and gets the same numbers.

Export format (models/punct/, little-endian), documented in models/punct/README.md:
  vocab.txt   one token per line, line i = id i; ids 0,1,2 are <unk>, <s>, </s>
  punct.bin   "SLPUNCT1", u32 vocab, embed, hidden, kernel, layers, u32 dilation[layers],
              f32 embedding[vocab][embed],
              per layer: f32 weight[out][in][kernel], f32 bias[out]   (in = embed for layer 0)
              f32 head_weight[5][hidden], f32 head_bias[5]
"""
from __future__ import annotations

import struct

import torch
import torch.nn as nn

UNK, BOS, EOS = 0, 1, 2
SPECIALS = ("<unk>", "<s>", "</s>")
N_OUT = 5                     # capitalize + 4 marks
MAGIC = b"SLPUNCT1"


class Punctuator(nn.Module):
    def __init__(self, vocab: int, embed: int = 64, hidden: int = 128, kernel: int = 5,
                 dilations: tuple[int, ...] = (1, 2, 4), dropout: float = 0.1):
        super().__init__()
        self.kernel, self.dilations = kernel, tuple(dilations)
        self.emb = nn.Embedding(vocab, embed)
        self.convs = nn.ModuleList()
        for i, d in enumerate(self.dilations):
            self.convs.append(nn.Conv1d(embed if i == 0 else hidden, hidden, kernel, dilation=d,
                                        padding=d * (kernel - 1) // 2))
        self.head = nn.Linear(hidden, N_OUT)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """ids, mask: [batch, time] (mask 1 for real tokens) → logits [batch, time, 5]."""
        m = mask.unsqueeze(1).float()                       # [B, 1, T]
        h = self.drop(self.emb(ids)).transpose(1, 2) * m    # [B, E, T]
        for i, conv in enumerate(self.convs):
            y = torch.relu(conv(h))
            h = (y if i == 0 else h + y) * m
            h = self.drop(h)
        return self.head(h.transpose(1, 2))


def export(model: Punctuator, vocab: list[str], bin_path: str, vocab_path: str) -> None:
    sd = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
    embed = sd["emb.weight"].shape[1]
    hidden = sd["head.weight"].shape[1]
    with open(bin_path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<5I", len(vocab), embed, hidden, model.kernel, len(model.dilations)))
        f.write(struct.pack(f"<{len(model.dilations)}I", *model.dilations))
        tensors = [sd["emb.weight"]]
        for i in range(len(model.dilations)):
            tensors += [sd[f"convs.{i}.weight"], sd[f"convs.{i}.bias"]]
        tensors += [sd["head.weight"], sd["head.bias"]]
        for t in tensors:
            f.write(t.numpy().astype("<f4").tobytes())
    with open(vocab_path, "w", encoding="utf-8") as f:
        for w in vocab:
            f.write(w + "\n")


def encode(words: list[str], index: dict[str, int]) -> list[int]:
    return [BOS] + [index.get(w, UNK) for w in words] + [EOS]
