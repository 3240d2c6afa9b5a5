#include "moe/attention.hpp"

#include <algorithm>
#include <cmath>

#include "moe/workspace.hpp"

namespace sluice::moe {
namespace {

// Query rows per block under full attention (chunk_frames 0): bounds the score matrix.
constexpr int64_t full_attention_block = 64;

// Appends the rotated keys and values of n frames of qkv to the cache. The buffers only grow
// (doubling), so a stream stops allocating after its first chunks.
void append(kv_cache& cache, const float* qkv, int64_t n, int64_t heads, int64_t dh, int64_t row, int64_t d) {
  cache.k.resize(heads);
  cache.v.resize(heads);
  const auto need = static_cast<std::size_t>((cache.len + n) * dh);
  for (int64_t h = 0; h < heads; ++h) {
    for (auto* buf : {&cache.k[h], &cache.v[h]})
      if (buf->size() < need) buf->resize(std::max(need, 2 * buf->size()));
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(qkv + i * row + d + h * dh, dh, cache.k[h].data() + (cache.len + i) * dh);
      std::copy_n(qkv + i * row + 2 * d + h * dh, dh, cache.v[h].data() + (cache.len + i) * dh);
    }
  }
  cache.len += n;
}

// Drops all but the last `keep` frames of the cache (keep < 0: keeps everything).
void trim(kv_cache& cache, int64_t keep, int64_t heads, int64_t dh) {
  if (keep < 0 || cache.len <= keep) return;
  const int64_t drop = cache.len - keep;
  for (int64_t h = 0; h < heads; ++h) {
    std::copy(cache.k[h].begin() + drop * dh, cache.k[h].begin() + cache.len * dh, cache.k[h].begin());
    std::copy(cache.v[h].begin() + drop * dh, cache.v[h].begin() + cache.len * dh, cache.v[h].begin());
  }
  cache.len = keep;
}

// Attention of one segment: rotates its rows of qkv, then writes its rows of att.
void segment_attention(const compute_ctx& ctx, const architecture& arch, const attention_segment& seg, float* qkv,
                       float* att, workspace& ws) {
  const int64_t d = arch.d_model, heads = arch.n_heads, dh = arch.head_dim(), row = 3 * d;
  const attention_window window = seg.window;
  const int64_t n = seg.n, p0 = seg.p0;
  const auto& ops = ctx.ops();
  kv_cache& cache = *seg.cache;
  qkv += seg.row0 * row;
  att += seg.row0 * d;
  const rope_table& rope = ws.rope;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = seg.row0 + i;
    ops.rope(qkv + i * row, rope.cos2_q.data() + r * dh, rope.sin2_q.data() + r * dh, dh, heads);
    ops.rope(qkv + i * row + d, rope.cos2.data() + r * dh, rope.sin2.data() + r * dh, dh, heads);
  }

  // The offline forward (empty cache, nothing kept) reads keys and values straight from qkv;
  // a stream appends them to its cache first, as later chunks will need them.
  const bool direct = cache.len == 0 && seg.keep == 0;
  if (!direct) append(cache, qkv, n, heads, dh, row, d);
  const int64_t total = direct ? n : cache.len, end = p0 + n;
  const int64_t first = end - total;  // position of key row 0

  float* kt = ws.scratch(ws.keys_t, dh * total);
  for (int64_t h = 0; h < heads; ++h) {
    const float* k = direct ? qkv + d + h * dh : cache.k[h].data();
    const float* v = direct ? qkv + 2 * d + h * dh : cache.v[h].data();
    const int64_t stride = direct ? row : dh;
    // Keys transposed once per head, so each block's scores are one matmul.
    for (int64_t j = 0; j < total; ++j)
      for (int64_t c = 0; c < dh; ++c) kt[c * total + j] = k[j * stride + c];
    for (int64_t i0 = 0; i0 < n;) {
      const int64_t pos = p0 + i0;
      int64_t i1, lo, hi;
      if (window.chunk_frames > 0) {
        const int64_t chunk = window.chunk_frames, c = pos / chunk;
        i1 = std::min(n, (c + 1) * chunk - p0);
        lo = window.left_chunks >= 0 ? std::max(first, (c - window.left_chunks) * chunk) : first;
        hi = std::min(end, (c + 1) * chunk);
      } else {
        i1 = std::min(n, i0 + full_attention_block);
        lo = first;
        hi = end;
      }
      const int64_t nq = i1 - i0, nk = hi - lo;
      float* scores = ws.scratch(ws.scores, nq * nk);
      ctx.small_matmul({nq, nk, dh, qkv + i0 * row + h * dh, row, kt + (lo - first), total, scores, nk});
      for (int64_t q = 0; q < nq; ++q) ops.softmax(scores + q * nk, nk);
      ctx.small_matmul({nq, dh, nk, scores, nk, v + (lo - first) * stride, stride, att + i0 * d + h * dh, d});
      i0 = i1;
    }
  }
  if (!direct) trim(cache, seg.keep, heads, dh);
}

}  // namespace

void preallocate_attention(const architecture& arch, attention_window w, const step_bounds& b, workspace& ws) {
  const int64_t d = arch.d_model, dh = arch.head_dim(), n = b.stream_frames;
  ws.commit(ws.qkv, b.tokens * 3 * d);
  ws.commit(ws.att, b.tokens * d);
  ws.commit(ws.rope.inv_freq, dh / 2);
  for (auto* v : {&ws.rope.cos2, &ws.rope.sin2, &ws.rope.cos2_q, &ws.rope.sin2_q}) ws.commit(*v, b.tokens * dh);
  // One stream's keys in segment_attention: what its cache keeps, then this step's frames;
  // a query block is at most a chunk (full_attention_block without chunks) and sees at most
  // its own chunk and left_chunks before it.
  const bool bounded = w.chunk_frames > 0 && w.left_chunks >= 0;
  const int64_t total = (bounded ? int64_t{w.left_chunks} * w.chunk_frames : 0) + n;
  const int64_t nq = std::min<int64_t>(w.chunk_frames > 0 ? w.chunk_frames : full_attention_block, n);
  const int64_t nk = bounded ? std::min<int64_t>(total, int64_t{w.left_chunks + 1} * w.chunk_frames) : total;
  ws.commit(ws.keys_t, dh * total);
  ws.commit(ws.scores, nq * nk);
}

void make_rope_table(std::span<const attention_segment> segs, int64_t n_rows, int head_dim, double base,
                     workspace& ws) {
  // model.py computes every step in f32; so do we, so that angles at large positions agree.
  rope_table& t = ws.rope;
  const int64_t half = head_dim / 2;
  ws.fit(t.inv_freq, half);
  const float base_f = static_cast<float>(base);
  for (int64_t i = 0; i < half; ++i) {
    const float expo = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    t.inv_freq[i] = 1.0f / static_cast<float>(std::pow(static_cast<double>(base_f), static_cast<double>(expo)));
  }
  for (auto* v : {&t.cos2, &t.sin2, &t.cos2_q, &t.sin2_q}) ws.fit(*v, n_rows * head_dim);
  const float inv_scale = 1.0f / static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
  for (const auto& seg : segs)
    for (int64_t r = seg.row0; r < seg.row0 + seg.n; ++r)
      for (int64_t i = 0; i < half; ++i) {
        const float ang = static_cast<float>(seg.p0 + (r - seg.row0)) * t.inv_freq[i];
        const float c = static_cast<float>(std::cos(static_cast<double>(ang)));
        const float s = static_cast<float>(std::sin(static_cast<double>(ang)));
        const int64_t at = r * head_dim + 2 * i;
        t.cos2[at] = t.cos2[at + 1] = c;
        t.sin2[at] = -s;
        t.sin2[at + 1] = s;
        t.cos2_q[at] = t.cos2_q[at + 1] = c * inv_scale;
        t.sin2_q[at] = -s * inv_scale;
        t.sin2_q[at + 1] = s * inv_scale;
      }
}

void attention_forward(const compute_ctx& ctx, const block_weights& w, const architecture& arch,
                       std::span<const attention_segment> segs, const float* xn, int64_t n_rows, float* out,
                       workspace& ws) {
  const int64_t d = arch.d_model;
  float* qkv = ws.scratch(ws.qkv, n_rows * 3 * d);
  ctx.linear(w.qkv, xn, n_rows, qkv);
  float* att = ws.scratch(ws.att, n_rows * d);
  attention_heads(ctx, arch, segs, qkv, att, ws);
  ctx.linear(w.proj, att, n_rows, out);
}

void attention_heads(const compute_ctx& ctx, const architecture& arch, std::span<const attention_segment> segs,
                     float* qkv, float* att, workspace& ws) {
  for (const auto& seg : segs)
    if (seg.n > 0) segment_attention(ctx, arch, seg, qkv, att, ws);
}

}  // namespace sluice::moe
