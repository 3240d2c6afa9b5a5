"""The sluice reference acoustic model (PyTorch): the architecture of DESIGN.md "Model contract".

fbank [B, T, 80] -> global CMVN -> conv2d subsampling x4 -> L blocks of
  (pre-LN chunked self-attention with rotary positions) + (pre-LN MoE feed-forward:
   shared SwiGLU expert(s) + E routed SwiGLU experts, two-level gating) -> CTC logits.

Two-level gating:
  level 1 (acoustic) scores G expert groups from the hidden state plus frame acoustic
  descriptors (energy, SNR proxy, spectral flatness, spectral entropy, from the raw fbank) and
  keeps the top `top_groups`;
  level 2 (semantic) scores the E experts from the hidden state plus a causal context summary
  (mean of the last `ctx_frames` hidden states) and keeps the top `top_k` inside the kept groups.
  Selection adds a per-group / per-expert bias (auxiliary-loss-free balancing); the gate
  weights use the unbiased scores: w_i ~ s1[group(i)] * s2[i], normalised over the chosen k.
Padding frames take no part in routing statistics or bias updates.

Everything here is the contract the C++ engine reproduces (moe/); keep them in step.
"""
from __future__ import annotations

import dataclasses
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclasses.dataclass
class ModelConfig:
    n_mels: int = 80
    vocab_size: int = 29
    d_model: int = 144
    n_heads: int = 4
    n_layers: int = 6
    conv_channels: int = 32
    # MoE
    n_shared: int = 1
    shared_hidden: int = 192
    n_routed: int = 32
    n_groups: int = 8
    top_groups: int = 2
    top_k: int = 4
    expert_hidden: int = 48
    n_acoustic: int = 4          # acoustic descriptors per frame
    ctx_frames: int = 8          # causal context summary length (subsampled frames)
    # attention chunks, in subsampled (40 ms) frames
    chunk_frames: int = 16       # 640 ms
    left_chunks: int = 4
    rope_base: float = 10000.0
    subsampling: int = 4

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(d: dict) -> "ModelConfig":
        fields = {f.name for f in dataclasses.fields(ModelConfig)}
        return ModelConfig(**{k: v for k, v in d.items() if k in fields})


def subsampled_length(n_frames: torch.Tensor | int):
    """Frames after two conv(k=3, s=2) layers; 0 when too short."""
    t1 = (n_frames - 3) // 2 + 1
    t2 = (t1 - 3) // 2 + 1
    if isinstance(t2, torch.Tensor):
        return t2.clamp(min=0)
    return max(t2, 0)


def acoustic_descriptors(fbank: torch.Tensor, n_out: int) -> torch.Tensor:
    """Frame acoustic descriptors from the raw (un-normalised) log-mel fbank.

    fbank: f32 [B, T, n_mels] (natural log of mel power). Returns f32 [B, n_out, 4]:
    log energy / 10, SNR proxy (energy above the running minimum) / 10, log spectral flatness,
    normalised spectral entropy; averaged over the 4 input frames of each subsampled frame
    (frames 4t .. 4t+3), which only looks at the past and the present chunk.
    """
    b, t, m = fbank.shape
    logp = fbank
    energy = torch.logsumexp(logp, dim=-1)                          # [B, T]
    flat = logp.mean(-1) - (energy - math.log(m))                   # log(geo mean / arith mean)
    q = torch.softmax(logp, dim=-1)
    entropy = -(q * torch.log(q.clamp_min(1e-12))).sum(-1) / math.log(m)
    running_min = torch.cummin(energy, dim=1).values
    snr = energy - running_min
    d = torch.stack([energy / 10.0, snr / 10.0, flat, entropy], dim=-1)   # [B, T, 4]
    need = n_out * 4
    if t < need:
        d = F.pad(d, (0, 0, 0, need - t), mode="replicate") if t > 0 else d.new_zeros(b, need, 4)
    d = d[:, :need].reshape(b, n_out, 4, 4).mean(2)
    return d


def rope_tables(n: int, dim: int, base: float, offset: int = 0, device=None):
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim))
    pos = torch.arange(offset, offset + n, dtype=torch.float32, device=device)
    ang = pos[:, None] * inv[None, :]                                # [n, dim/2]
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [B, H, T, Dh]; rotates pairs (x[2i], x[2i+1])."""
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    r1 = x1 * cos - x2 * sin
    r2 = x1 * sin + x2 * cos
    return torch.stack([r1, r2], dim=-1).flatten(-2)


def chunk_mask(t: int, chunk: int, left_chunks: int, device=None) -> torch.Tensor:
    """Bool [T, T]: query i may attend key j (same chunk, or up to left_chunks chunks back).
    left_chunks < 0 means unbounded left context; chunk <= 0 means full attention."""
    if chunk <= 0:
        return torch.ones(t, t, dtype=torch.bool, device=device)
    c = torch.arange(t, device=device) // chunk
    ok = c[None, :] <= c[:, None]
    if left_chunks >= 0:
        ok &= c[None, :] >= c[:, None] - left_chunks
    return ok


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm computed in f32 whatever the input dtype, autocast or not (the same
    parameters and state_dict names). Under bf16 autocast CUDA already runs layer_norm in f32;
    torch 1.13's CPU autocast does not and fails on a bf16 input with f32 weights, so the model
    does it itself and behaves the same on both devices. Returns f32."""

    def forward(self, x):
        with torch.autocast(x.device.type, enabled=False):
            return F.layer_norm(x.float(), self.normalized_shape, self.weight, self.bias, self.eps)


class ConvSubsampling(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        c = cfg.conv_channels
        self.conv1 = nn.Conv2d(1, c, 3, stride=2)
        self.conv2 = nn.Conv2d(c, c, 3, stride=2)
        f = ((cfg.n_mels - 3) // 2 + 1 - 3) // 2 + 1
        self.out = nn.Linear(c * f, cfg.d_model)

    def forward(self, x):                     # x: [B, T, n_mels]
        x = F.relu(self.conv1(x.unsqueeze(1)))
        x = F.relu(self.conv2(x))             # [B, C, T', F']
        b, c, t, f = x.shape
        return self.out(x.permute(0, 2, 1, 3).reshape(b, t, c * f))


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.h = cfg.n_heads
        self.dh = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.base = cfg.rope_base

    def forward(self, x, mask):               # x [B, T, D], mask bool [B, T, T]
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        cos, sin = rope_tables(t, self.dh, self.base, device=x.device)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
        att = att.masked_fill(~mask[:, None], float("-inf"))
        att = torch.softmax(att, dim=-1)
        att = torch.nan_to_num(att)           # fully masked rows (padding queries)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class SwiGLU(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.w_gate = nn.Linear(d, hidden, bias=False)
        self.w_up = nn.Linear(d, hidden, bias=False)
        self.w_down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


def causal_context(y: torch.Tensor, k: int) -> torch.Tensor:
    """Mean of the last k frames up to and including t (fewer at the start). y [B, T, D]."""
    cs = torch.cumsum(y, dim=1)
    shifted = F.pad(cs, (0, 0, k, 0))[:, : y.shape[1]]
    n = torch.clamp(torch.arange(1, y.shape[1] + 1, device=y.device), max=k).to(y.dtype)
    return (cs - shifted) / n[None, :, None]


class MoE(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.shared = nn.ModuleList([SwiGLU(d, cfg.shared_hidden) for _ in range(cfg.n_shared)])
        self.experts = nn.ModuleList([SwiGLU(d, cfg.expert_hidden) for _ in range(cfg.n_routed)])
        self.router1 = nn.Linear(d + cfg.n_acoustic, cfg.n_groups)     # level 1: acoustic
        self.router2 = nn.Linear(2 * d, cfg.n_routed)                 # level 2: semantic
        self.register_buffer("group_bias", torch.zeros(cfg.n_groups))
        self.register_buffer("expert_bias", torch.zeros(cfg.n_routed))
        self.per_group = cfg.n_routed // cfg.n_groups
        # "loop" (per-expert GEMMs, CPU default) or "dense" (batched, sync-free): same math.
        self.impl = "loop"
        self._last = None        # the last pass's routing: (groups, experts, weights, valid or None)
        self.last_load = None    # float [E] tokens per expert (valid tokens only)
        self.last_group_load = None

    def route(self, y, acoustic, ctx):
        """Two-level routing of N tokens (y, ctx [N, D], acoustic [N, 4]) -> groups [N, g],
        experts [N, k], weights [N, k]. Computed in f32 with autocast off, so that under bf16
        autocast the experts chosen do not depend on bf16 rounding of the scores (the engine
        routes in f32)."""
        cfg = self.cfg
        with torch.autocast(y.device.type, enabled=False):
            y, acoustic, ctx = y.float(), acoustic.float(), ctx.float()
            s1 = torch.sigmoid(self.router1(torch.cat([y, acoustic], -1)))     # [N, G]
            s2 = torch.sigmoid(self.router2(torch.cat([y, ctx], -1)))          # [N, E]
            groups = torch.topk(s1 + self.group_bias, cfg.top_groups, dim=-1).indices   # [N, g]
            gmask = torch.zeros_like(s1, dtype=torch.bool).scatter_(1, groups, True)
            emask = gmask.repeat_interleave(self.per_group, dim=1)         # [N, E]
            sel_scores = (s2 + self.expert_bias).masked_fill(~emask, float("-inf"))
            experts = torch.topk(sel_scores, cfg.top_k, dim=-1).indices     # [N, k]
            group_of = experts // self.per_group
            w = torch.gather(s2, 1, experts) * torch.gather(s1, 1, group_of)
            w = w / w.sum(-1, keepdim=True).clamp_min(1e-9)
        return groups, experts, w

    @property
    def last_route(self):
        """(groups [N, g], experts [N, k], weights [N, k]) of the valid tokens of the last pass."""
        if self._last is None:
            return None
        groups, experts, w, valid = self._last
        if valid is None:
            return groups, experts, w
        return groups[valid], experts[valid], w[valid]

    def forward(self, y, acoustic, valid):
        """y [B, T, D]; acoustic [B, T, 4]; valid bool [B, T]."""
        cfg = self.cfg
        out = torch.zeros_like(y)
        for s in self.shared:
            out = out + s(y)
        ctx = causal_context(y, cfg.ctx_frames)
        if self.impl == "dense":
            return out + self._forward_dense(y, acoustic, ctx, valid)
        yv, av, cv = y[valid], acoustic[valid], ctx[valid]             # [N, *]
        groups, experts, w = self.route(yv, av, cv)
        counts = torch.bincount(experts.reshape(-1), minlength=cfg.n_routed)
        routed = self._routed_loop(yv, experts, w, counts)
        out[valid] = out[valid] + routed
        with torch.no_grad():
            self._last = (groups, experts, w, None)
            self.last_load = counts.float()
            self.last_group_load = torch.bincount(groups.reshape(-1), minlength=cfg.n_groups).float()
        return out

    def _forward_dense(self, y, acoustic, ctx, valid):
        """The routed experts of every frame, padding included, with no host synchronisation:
        padding frames get zero routing weights and count in no load (scatter_add instead of
        bincount, no boolean selection), so a training step on an accelerator never waits for
        the host. The valid frames get exactly what the loop path gives them."""
        cfg = self.cfg
        b, t, d = y.shape
        vf = valid.reshape(-1)
        groups, experts, w = self.route(y.reshape(b * t, d), acoustic.reshape(b * t, -1),
                                        ctx.reshape(b * t, d))
        w = w * vf[:, None].to(w.dtype)
        routed = self._routed_dense(y.reshape(b * t, d), experts, w).reshape(b, t, d)
        with torch.no_grad():
            ones = vf.to(torch.float32)
            self._last = (groups, experts, w, vf)
            self.last_load = torch.zeros(cfg.n_routed, device=y.device).scatter_add_(
                0, experts.reshape(-1), ones.repeat_interleave(cfg.top_k))
            self.last_group_load = torch.zeros(cfg.n_groups, device=y.device).scatter_add_(
                0, groups.reshape(-1), ones.repeat_interleave(cfg.top_groups))
        return routed

    def _routed_loop(self, yv, experts, w, counts):
        """Tokens sorted by expert, one small GEMM per expert: the fewest FLOPs, but a Python loop
        with a host synchronisation (counts.tolist()) per layer. The default on CPU."""
        cfg = self.cfg
        routed = torch.zeros_like(yv)
        flat_e = experts.reshape(-1)
        flat_tok = torch.arange(yv.shape[0], device=yv.device).repeat_interleave(cfg.top_k)
        flat_w = w.reshape(-1)
        order = torch.argsort(flat_e, stable=True)
        start = 0
        for e, n in enumerate(counts.tolist()):
            if n == 0:
                continue
            idx = order[start:start + n]
            start += n
            tok = flat_tok[idx]
            routed.index_add_(0, tok, self.experts[e](yv[tok]) * flat_w[idx, None])
        return routed

    def _routed_dense(self, yv, experts, w):
        """Every expert on every token as three GEMMs over the experts' weights side by side
        ([D, E*H] gate and up, [E*H, D] down), each expert's hidden activations scaled by its
        routing weight, which is zero for experts not chosen: sum_e w_e W_down,e h_e equals
        W_down,all (w_1 h_1, ..., w_E h_E). The same sum as _routed_loop (up to float summation
        order), with no Python loop over experts and no .tolist(), at n_routed/top_k times the
        FLOPs of the routed part: for accelerators, where kernel launches and host
        synchronisations cost more than arithmetic, and three large GEMMs keep the tensor cores
        busy. The parameters stay per expert, so checkpoints and exported weights are the same
        for both."""
        n = yv.shape[0]
        e, h = len(self.experts), self.cfg.expert_hidden
        wg = torch.cat([x.w_gate.weight for x in self.experts])        # [E*H, D]
        wu = torch.cat([x.w_up.weight for x in self.experts])          # [E*H, D]
        wd = torch.cat([x.w_down.weight for x in self.experts], 1)     # [D, E*H]
        dense_w = torch.zeros(n, e, dtype=w.dtype, device=w.device).scatter(1, experts, w)
        act = F.silu(F.linear(yv, wg)) * F.linear(yv, wu)              # [N, E*H]
        act = (act.view(n, e, h) * dense_w[..., None]).view(n, e * h)
        return F.linear(act, wd)

    @torch.no_grad()
    def update_bias(self, rate: float, load=None, group_load=None):
        """Auxiliary-loss-free balancing: nudge each bias toward equal load (sign update). The
        loads are the last pass's unless given (summed over micro-batches or ranks by train.py).
        No load at all changes nothing (sign(0) = 0), with no host synchronisation to check."""
        load = self.last_load if load is None else load
        group_load = self.last_group_load if group_load is None else group_load
        if load is None:
            return
        for load, bias in ((load, self.expert_bias), (group_load, self.group_bias)):
            bias += rate * torch.sign(load.mean() - load)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.ln2 = LayerNorm(cfg.d_model)
        self.moe = MoE(cfg)

    def forward(self, x, mask, acoustic, valid):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.moe(self.ln2(x), acoustic, valid)


class AcousticModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("cmvn_mean", torch.zeros(cfg.n_mels))
        self.register_buffer("cmvn_istd", torch.ones(cfg.n_mels))
        self.subsample = ConvSubsampling(cfg)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layers)])
        self.ln_out = LayerNorm(cfg.d_model)
        self.ctc = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, fbank, lengths, chunk: int | None = None, left_chunks: int | None = None,
                return_hidden: bool = False):
        """fbank f32 [B, T, n_mels] (raw log-mel), lengths [B] -> logits [B, T', V], lengths'."""
        cfg = self.cfg
        chunk = cfg.chunk_frames if chunk is None else chunk
        left_chunks = cfg.left_chunks if left_chunks is None else left_chunks
        x = (fbank - self.cmvn_mean) * self.cmvn_istd
        x = self.subsample(x)
        b, t, _ = x.shape
        out_len = subsampled_length(lengths).clamp(max=t)
        valid = torch.arange(t, device=x.device)[None, :] < out_len[:, None]        # [B, T']
        acoustic = acoustic_descriptors(fbank, t)
        mask = chunk_mask(t, chunk, left_chunks, x.device)[None] & valid[:, None, :]
        hidden = []
        for blk in self.blocks:
            x = blk(x, mask, acoustic, valid)
            if return_hidden:
                hidden.append(x)
        logits = self.ctc(self.ln_out(x))
        if return_hidden:
            return logits, out_len, hidden
        return logits, out_len

    def moe_layers(self):
        return [blk.moe for blk in self.blocks]

    def param_counts(self):
        total = sum(p.numel() for p in self.parameters())
        cfg = self.cfg
        per_expert = sum(p.numel() for p in self.blocks[0].moe.experts[0].parameters())
        inactive = cfg.n_layers * (cfg.n_routed - cfg.top_k) * per_expert
        return total, total - inactive
