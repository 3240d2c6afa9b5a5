#pragma once
/// The MoE feed-forward of one encoder block (model.py's MoE): the shared SwiGLU expert(s) on
/// every token plus the routed experts chosen by two-level gating.

#include <cstdint>
#include <vector>

#include "moe/compute.hpp"
#include "moe/model_manifest.hpp"
#include "moe/model_weights.hpp"
#include "moe/routing.hpp"

namespace sluice::moe {

struct workspace;

/// The LayerNormed hidden states of the last frames before the current run, for the causal
/// context mean (at most ctx_frames - 1 rows). Per stream and layer.
struct context_cache {
  std::vector<float> rows;  ///< f32 [n, D], oldest first
  int64_t n = 0;
};

/// Mean of the last ctx_frames rows up to and including each frame (fewer at the start of
/// the utterance): context f32 [n, D] for y f32 [n, D] preceded by `cache`, which is then
/// advanced past y.
void causal_context(const float* y, int64_t n, int64_t d, int ctx_frames, context_cache& cache, float* context);

/// out f32 [n, D] = shared(y) + routed(y) for y f32 [n, D] (ln2 output) and acoustic f32
/// [n, n_acoustic]. The routing decision is left in ws.route.
void moe_forward(const compute_ctx& ctx, const moe_weights& w, const architecture& arch, const float* y,
                 const float* acoustic, int64_t n, context_cache& cache, float* out, workspace& ws);

}  // namespace sluice::moe
