#pragma once
/// The routed experts as a grouped GEMM over a block of (row, expert, weight) pairs: the pairs
/// are counting-sorted by expert, each expert's rows are gathered into one block, the
/// expert's SwiGLU runs as two matmuls over that block, and the results are added back to
/// their rows weighted by the gate. Per row the experts' contributions are added in
/// ascending expert order, as model.py's index_add_ loop does.

#include <cstdint>
#include <vector>

#include "moe/compute.hpp"
#include "moe/model_manifest.hpp"
#include "moe/model_weights.hpp"

namespace sluice::moe {

struct workspace;
struct step_bounds;

/// Counting sort of n_pairs pairs by expert (each expert[p] in [0, n_experts)), stable:
/// ws.expert_offsets [n_experts + 1] (expert e owns slots [offsets[e], offsets[e + 1])) and
/// ws.pair_order [n_pairs] (the pair in each slot).
void sort_pairs_by_expert(const int32_t* expert, int64_t n_pairs, int64_t n_experts, workspace& ws);

/// Commits ws's buffers of grouped_experts_forward for blocks of up to `pairs` pairs of
/// `arch`'s experts (preallocation).
void preallocate_experts(const architecture& arch, int64_t pairs, workspace& ws);

/// out f32 [n_rows, D] = for each row, the sum over its pairs of weight * expert(row), for
/// rows f32 [n_rows, D] and pairs (pair_row, pair_expert, pair_weight: [n_pairs] each, rows
/// and experts in range, any order). Rows without pairs get zeros.
void grouped_experts_forward(const compute_ctx& ctx, const expert_bank& bank, const float* rows, int64_t n_rows,
                             const int32_t* pair_row, const int32_t* pair_expert, const float* pair_weight,
                             int64_t n_pairs, float* out, workspace& ws);

/// The same over experts packed as in expert_bank but held elsewhere (a backend's buffers):
/// gate_up f32 [n_experts, d, 2 hidden], down f32 [n_experts, hidden, d].
struct expert_bank_view {
  const float* gate_up = nullptr;
  const float* down = nullptr;
  int64_t n_experts = 0, d = 0, hidden = 0;

  const float* gate_up_of(int64_t e) const { return gate_up + e * d * 2 * hidden; }
  const float* down_of(int64_t e) const { return down + e * hidden * d; }
};
void grouped_experts_forward(const compute_ctx& ctx, const expert_bank_view& bank, const float* rows, int64_t n_rows,
                             const int32_t* pair_row, const int32_t* pair_expert, const float* pair_weight,
                             int64_t n_pairs, float* out, workspace& ws);

/// One SwiGLU over m rows: out f32 [m, d] = (silu(x Wg) * (x Wu)) Wd for x f32 [m, d], with
/// gate_up f32 [d, 2 hidden] and down f32 [hidden, d]; `h` is scratch f32 [m, 2 hidden].
/// Runs on the small-product backend when `small`, else on the dense one.
void swiglu_forward(const compute_ctx& ctx, bool small, const float* gate_up, const float* down, int64_t d,
                    int64_t hidden, const float* x, int64_t m, float* h, float* out, bool accumulate);

}  // namespace sluice::moe
