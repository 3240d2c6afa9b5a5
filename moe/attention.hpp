#pragma once
/// Chunked self-attention of one encoder block with rotary positions (model.py's Attention
/// with chunk_mask), computed for a micro-batch: each stream's run of new frames against that
/// stream's own cache of earlier ones, the projections batched over every row.
///
/// Query at absolute position i (subsampled frames from the start of the utterance) sees key j
/// when chunk(j) is in [chunk(i) - left_chunks, chunk(i)], chunk(x) = x / chunk_frames; with
/// chunk_frames 0 every frame sees every frame, with left_chunks -1 all past chunks.

#include <cstdint>
#include <span>
#include <vector>

#include "moe/compute.hpp"
#include "moe/model_manifest.hpp"
#include "moe/model_weights.hpp"

namespace sluice::moe {

struct workspace;
struct step_bounds;

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

/// RoPE factors of a micro-batch's rows in the layout cpu_ops::rope takes, each row at its own
/// stream position; the query's also carry the attention scale 1 / sqrt(head_dim), so scores
/// need no separate scaling.
struct rope_table {
  std::vector<float> cos2, sin2;      ///< f32 [n_rows, head_dim], for keys
  std::vector<float> cos2_q, sin2_q;  ///< f32 [n_rows, head_dim], for queries: the above / sqrt(head_dim)
  std::vector<float> inv_freq;        ///< f32 [head_dim / 2]: base^(-2i / head_dim)
};

/// One stream's run of consecutive frames inside a micro-batch's rows.
struct attention_segment {
  int64_t row0 = 0;         ///< first row of the run in the micro-batch
  int64_t n = 0;            ///< frames in the run
  int64_t p0 = 0;           ///< stream position (subsampled frames since the utterance began) of row0
  attention_window window;  ///< the stream's window
  kv_cache* cache = nullptr;  ///< the stream's cache of this layer
  int64_t keep = 0;         ///< frames the cache keeps afterwards (< 0: all)
};

/// Commits ws's attention and RoPE buffers for the largest step of `bounds` whose streams
/// attend through `window`. With an unbounded window (left_chunks < 0) a stream's keys grow
/// with its utterance: they are committed for one step's frames only.
void preallocate_attention(const architecture& arch, attention_window window, const step_bounds& bounds,
                           workspace& ws);

/// ws.rope for the rows of `segs` (n_rows in all), as model.py's rope_tables in f32:
/// angle = pos * base^(-2i / head_dim).
void make_rope_table(std::span<const attention_segment> segs, int64_t n_rows, int head_dim, double base,
                     workspace& ws);

/// out f32 [n_rows, D] = proj(attention(xn)) for xn f32 [n_rows, D] (already LayerNormed),
/// with ws.rope made for the same segments. Each segment attends only within its own stream:
/// its `cache` holds the frames [p0 - cache.len, p0) and must cover every key the window lets
/// these queries see; on return it holds the last `keep` frames of [.., p0 + n) (all of them
/// when keep < 0). With an empty cache and keep 0 (the offline forward) the cache is not
/// touched at all.
void attention_forward(const compute_ctx& ctx, const block_weights& w, const architecture& arch,
                       std::span<const attention_segment> segs, const float* xn, int64_t n_rows, float* out,
                       workspace& ws);

/// The heads of attention_forward between its two projections: qkv f32 [n_rows, 3 D] (rotated
/// in place with ws.rope, which must be made for `segs`) -> att f32 [n_rows, D]. Caches as there.
void attention_heads(const compute_ctx& ctx, const architecture& arch, std::span<const attention_segment> segs,
                     float* qkv, float* att, workspace& ws);

}  // namespace sluice::moe
