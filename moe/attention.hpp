#pragma once
/// Chunked self-attention of one encoder block with rotary positions (model.py's Attention
/// with chunk_mask), computed for a run of new frames against a cache of earlier ones.
///
/// Query at absolute position i (subsampled frames from the start of the utterance) sees key j
/// when chunk(j) is in [chunk(i) - left_chunks, chunk(i)], chunk(x) = x / chunk_frames; with
/// chunk_frames 0 every frame sees every frame, with left_chunks -1 all past chunks.

#include <cstdint>
#include <vector>

#include "moe/compute.hpp"
#include "moe/model_manifest.hpp"
#include "moe/model_weights.hpp"

namespace sluice::moe {

struct workspace;

struct attention_window {
  int chunk_frames = 0;  ///< 0: full attention
  int left_chunks = -1;  ///< -1: unbounded
};

/// Keys (rotated) and values of the frames before the current run, per head. Per stream.
/// The buffers hold at least len rows and never shrink.
struct kv_cache {
  std::vector<std::vector<float>> k;  ///< per head f32 [>= len, head_dim]
  std::vector<std::vector<float>> v;  ///< per head f32 [>= len, head_dim]
  int64_t len = 0;                    ///< frames held
};

/// RoPE factors of positions [p0, p0 + n) in the layout cpu_ops::rope takes; the query's
/// also carry the attention scale 1 / sqrt(head_dim), so scores need no separate scaling.
struct rope_table {
  std::vector<float> cos2, sin2;      ///< f32 [n, head_dim], for keys
  std::vector<float> cos2_q, sin2_q;  ///< f32 [n, head_dim], for queries: the above / sqrt(head_dim)
};

/// As model.py's rope_tables in f32: angle = pos * base^(-2i / head_dim).
rope_table make_rope_table(int64_t p0, int64_t n, int head_dim, double base);

/// out f32 [n, D] = proj(attention(xn)) for the n frames xn f32 [n, D] (already LayerNormed)
/// at positions [p0, p0 + n). `cache` holds the frames [p0 - cache.len, p0) and must cover
/// every key the window lets these queries see; on return it holds the last `keep` frames
/// of [.., p0 + n) (all of them when keep < 0). With an empty cache and keep 0 (the offline
/// forward) the cache is not touched at all.
void attention_forward(const compute_ctx& ctx, const block_weights& w, const architecture& arch,
                       attention_window window, int64_t p0, const float* xn, int64_t n, const rope_table& rope,
                       kv_cache& cache, int64_t keep, float* out, workspace& ws);

}  // namespace sluice::moe
