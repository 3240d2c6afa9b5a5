#pragma once
/// The dense half of one encoder block's MoE feed-forward (model.py's MoE): the shared SwiGLU
/// expert(s) on every token, the causal context mean and the two-level routing. The routed
/// experts the routing picks run elsewhere (expert_shard), on token blocks.

#include <cstdint>
#include <span>
#include <vector>

#include "moe/compute.hpp"
#include "moe/model_manifest.hpp"
#include "moe/model_weights.hpp"
#include "moe/routing.hpp"

namespace sluice::moe {

struct workspace;
struct step_bounds;

/// The LayerNormed hidden states of the last frames before the current run, for the causal
/// context mean (at most ctx_frames - 1 rows). Per stream and layer. The buffer never
/// shrinks, so a stream stops allocating once it is full.
struct context_cache {
  std::vector<float> rows;  ///< f32 [>= n, D], oldest first
  int64_t n = 0;
};

/// Mean of the last ctx_frames rows up to and including each frame (fewer at the start of
/// the utterance): context f32 [n, D] for y f32 [n, D] preceded by `cache`, which is then
/// advanced past y.
void causal_context(const float* y, int64_t n, int64_t d, int ctx_frames, context_cache& cache, float* context);

/// One stream's rows inside a micro-batch, with its context cache of this layer.
struct context_segment {
  int64_t row0 = 0, n = 0;
  context_cache* cache = nullptr;
};

/// Commits ws's buffers of moe_dense_forward and route_tokens (shared experts, context,
/// routing) for `bounds.tokens` rows (preallocation).
void preallocate_dense(const architecture& arch, const step_bounds& bounds, workspace& ws);

/// For y f32 [n_rows, D] (ln2 output of every stream's rows) and acoustic f32 [n_rows,
/// n_acoustic]: shared_out f32 [n_rows, D] = the shared experts' sum, and ws.route = the
/// routing of every row (each segment's context mean read with its own cache).
void moe_dense_forward(const compute_ctx& ctx, const moe_weights& w, const architecture& arch,
                       std::span<const context_segment> segs, const float* y, const float* acoustic, int64_t n_rows,
                       float* shared_out, workspace& ws);

}  // namespace sluice::moe
