#include "moe/routed_experts.hpp"

#include <algorithm>

#include "moe/workspace.hpp"

namespace sluice::moe {

void group_by_expert(const routing& r, int64_t n_experts, expert_groups& g, std::vector<int64_t>& cursor) {
  const int64_t pairs = r.n * r.top_k;
  g.offsets.assign(n_experts + 1, 0);
  for (int64_t p = 0; p < pairs; ++p) ++g.offsets[r.experts[p] + 1];
  for (int64_t e = 0; e < n_experts; ++e) g.offsets[e + 1] += g.offsets[e];
  cursor.assign(g.offsets.begin(), g.offsets.end() - 1);
  g.token.resize(pairs);
  g.weight.resize(pairs);
  // Pairs are visited token by token, so each expert's slots come out in token order.
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t slot = cursor[r.experts[p]]++;
    g.token[slot] = static_cast<int32_t>(p / r.top_k);
    g.weight[slot] = r.weights[p];
  }
}

void swiglu_forward(const compute_ctx& ctx, bool small, const float* gate_up, const float* down, int64_t d,
                    int64_t hidden, const float* x, int64_t m, float* h, float* out, bool accumulate) {
  // Gate and up products into two contiguous halves of h, so one silu_mul covers them.
  float* gate = h;
  float* up = h + m * hidden;
  const kernels::cpu::matmul_args g{m, hidden, d, x, d, gate_up, 2 * hidden, gate, hidden};
  const kernels::cpu::matmul_args u{m, hidden, d, x, d, gate_up + hidden, 2 * hidden, up, hidden};
  for (const auto& a : {g, u}) small ? ctx.small_matmul(a) : ctx.dense_matmul(a);
  ctx.ops().silu_mul(gate, up, gate, m * hidden);
  kernels::cpu::matmul_args dn{m, d, hidden, gate, hidden, down, d, out, d};
  dn.accumulate = accumulate;
  small ? ctx.small_matmul(dn) : ctx.dense_matmul(dn);
}

void routed_experts_forward(const compute_ctx& ctx, const expert_bank& bank, const routing& r, const float* y,
                            float* out, workspace& ws) {
  const int64_t d = bank.d, hidden = bank.hidden;
  expert_groups& g = ws.groups;
  group_by_expert(r, bank.n_experts, g, ws.cursor);
  const int64_t pairs = r.n * r.top_k;
  float* x = scratch(ws.gathered, pairs * d);
  float* h = scratch(ws.hidden, pairs * 2 * hidden);
  float* o = scratch(ws.expert_out, pairs * d);
  for (int64_t s = 0; s < pairs; ++s) std::copy_n(y + g.token[s] * d, d, x + s * d);
  for (int64_t e = 0; e < bank.n_experts; ++e) {
    const int64_t begin = g.offsets[e], m = g.offsets[e + 1] - begin;
    if (m == 0) continue;
    swiglu_forward(ctx, true, bank.gate_up_of(e), bank.down_of(e), d, hidden, x + begin * d, m,
                   h + begin * 2 * hidden, o + begin * d, false);
  }
  // Slots are in expert order, so each token receives its experts in ascending order.
  float* routed = scratch(ws.routed, r.n * d);
  std::fill_n(routed, r.n * d, 0.0f);
  for (int64_t s = 0; s < pairs; ++s) {
    float* dst = routed + g.token[s] * d;
    const float* src = o + s * d;
    const float wt = g.weight[s];
    for (int64_t i = 0; i < d; ++i) dst[i] += src[i] * wt;
  }
  for (int64_t i = 0; i < r.n * d; ++i) out[i] += routed[i];
}

}  // namespace sluice::moe
