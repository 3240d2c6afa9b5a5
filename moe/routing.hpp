#pragma once
/// Two-level gating of model.py's MoE: level 1 scores expert groups from the hidden state and
/// the frame's acoustic descriptors and keeps the top `top_groups`; level 2 scores every
/// expert from the hidden state and the causal context mean and keeps the top `top_k` inside
/// the kept groups. Selection adds the balancing biases; the gate weights use the unbiased
/// sigmoid scores: w_i = s2[i] * s1[group(i)], normalised over the chosen experts.

#include <cstdint>
#include <vector>

#include "moe/compute.hpp"
#include "moe/model_manifest.hpp"
#include "moe/model_weights.hpp"

namespace sluice::moe {

struct workspace;

struct routing {
  int64_t n = 0;                 ///< tokens
  int top_groups = 0, top_k = 0;
  int64_t n_groups = 0, n_experts = 0;
  std::vector<int32_t> groups;   ///< i32 [n, top_groups], best first
  std::vector<int32_t> experts;  ///< i32 [n, top_k], best first
  std::vector<float> weights;    ///< f32 [n, top_k], gate weight of experts[t, j]; each row sums to 1
  std::vector<float> group_scores;   ///< f32 [n, n_groups]: level-1 sigmoid scores (no bias)
  std::vector<float> expert_scores;  ///< f32 [n, n_experts]: level-2 sigmoid scores (no bias)

  int64_t experts_per_group() const { return n_experts / n_groups; }
};

/// Indices of the k largest of scores[0 .. n) into out[0 .. k), largest first, as torch.topk
/// picks them; among equal scores the lower index wins.
void top_k_indices(const float* scores, int64_t n, int k, int32_t* out);

/// Routes n tokens: y f32 [n, D] (the LayerNormed hidden state), acoustic f32 [n, n_acoustic],
/// context f32 [n, D] (causal mean of the last ctx_frames rows of y), into `out`.
void route_tokens(const compute_ctx& ctx, const moe_weights& w, const architecture& arch, const float* y,
                  const float* acoustic, const float* context, int64_t n, workspace& ws, routing& out);

/// route_tokens' selection alone, for r's n, shapes and sigmoid scores (group_scores,
/// expert_scores) already set: groups, experts and weights. Biases: f32 [n_groups], [n_experts].
void select_experts(const float* group_bias, const float* expert_bias, workspace& ws, routing& r);

/// The expert token t would take next: the best by level 2's selection score (sigmoid score +
/// expert_bias, as route_tokens ranks them; the lower index among equals) inside the token's
/// chosen groups, skipping the experts in `taken` ([top_k], the token's current experts) and
/// those with full[e] != 0 (full: u8 [n_experts]). -1 when every candidate is taken or full.
int32_t next_best_expert(const routing& r, const float* expert_bias, int64_t t, const int32_t* taken,
                         const uint8_t* full);

/// The gate weight expert e gets for token t in place of one of its chosen experts: its
/// unbiased score s2[e] * s1[group(e)], divided by the same sum that normalised the token's
/// original weights, so the token's other pairs keep theirs.
float replacement_weight(const routing& r, int64_t t, int32_t e);

}  // namespace sluice::moe
