#pragma once
/// The routed half of the MoE feed-forward as a grouped GEMM: the (token, expert) pairs of a
/// routing are counting-sorted by expert, each expert's tokens are gathered into one block,
/// the expert's SwiGLU runs as two matmuls over that block, and the results are scattered back
/// weighted by the gate. Per token the experts' contributions are added in ascending expert
/// order, as model.py's index_add_ loop does.

#include <cstdint>
#include <vector>

#include "moe/compute.hpp"
#include "moe/model_weights.hpp"
#include "moe/routing.hpp"

namespace sluice::moe {

struct workspace;

/// Tokens grouped by expert: the output of the counting sort.
struct expert_groups {
  std::vector<int64_t> offsets;  ///< [n_experts + 1]: expert e owns slots [offsets[e], offsets[e + 1])
  std::vector<int32_t> token;    ///< [n * top_k]: token of each slot, ascending within an expert
  std::vector<float> weight;     ///< [n * top_k]: gate weight of each slot
};

/// Groups the pairs of `r` by expert into `g` (stable: tokens stay in order within an expert);
/// `cursor` is scratch.
void group_by_expert(const routing& r, int64_t n_experts, expert_groups& g, std::vector<int64_t>& cursor);

/// out f32 [n, D] += the routed experts' weighted outputs for tokens y f32 [n, D].
void routed_experts_forward(const compute_ctx& ctx, const expert_bank& bank, const routing& r, const float* y,
                            float* out, workspace& ws);

/// One SwiGLU over m rows: out f32 [m, d] = (silu(x Wg) * (x Wu)) Wd for x f32 [m, d], with
/// gate_up f32 [d, 2 hidden] and down f32 [hidden, d]; `h` is scratch f32 [m, 2 hidden].
/// Runs on the small-product backend when `small`, else on the dense one.
void swiglu_forward(const compute_ctx& ctx, bool small, const float* gate_up, const float* down, int64_t d,
                    int64_t hidden, const float* x, int64_t m, float* h, float* out, bool accumulate);

}  // namespace sluice::moe
