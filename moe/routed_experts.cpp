#include "moe/routed_experts.hpp"

#include <algorithm>

#include "moe/workspace.hpp"

namespace sluice::moe {

void sort_pairs_by_expert(const int32_t* expert, int64_t n_pairs, int64_t n_experts, workspace& ws) {
  auto& offsets = ws.expert_offsets;
  ws.fit(offsets, n_experts + 1);
  std::fill(offsets.begin(), offsets.end(), 0);
  for (int64_t p = 0; p < n_pairs; ++p) ++offsets[expert[p] + 1];
  for (int64_t e = 0; e < n_experts; ++e) offsets[e + 1] += offsets[e];
  ws.fit(ws.cursor, n_experts);
  std::copy(offsets.begin(), offsets.end() - 1, ws.cursor.begin());
  ws.fit(ws.pair_order, n_pairs);
  // Pairs are visited in order, so each expert's slots keep the pairs' order.
  for (int64_t p = 0; p < n_pairs; ++p) ws.pair_order[ws.cursor[expert[p]]++] = static_cast<int32_t>(p);
}

void preallocate_experts(const architecture& arch, int64_t pairs, workspace& ws) {
  ws.commit(ws.expert_offsets, arch.n_routed + 1);
  ws.commit(ws.cursor, arch.n_routed);
  ws.commit(ws.pair_order, pairs);
  ws.commit(ws.gathered, pairs * arch.d_model);
  ws.commit(ws.hidden, pairs * 2 * arch.expert_hidden);
  ws.commit(ws.expert_out, pairs * arch.d_model);
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

void grouped_experts_forward(const compute_ctx& ctx, const expert_bank& bank, const float* rows, int64_t n_rows,
                             const int32_t* pair_row, const int32_t* pair_expert, const float* pair_weight,
                             int64_t n_pairs, float* out, workspace& ws) {
  grouped_experts_forward(ctx, expert_bank_view{bank.gate_up.data(), bank.down.data(), bank.n_experts, bank.d, bank.hidden},
                          rows, n_rows, pair_row, pair_expert, pair_weight, n_pairs, out, ws);
}

void grouped_experts_forward(const compute_ctx& ctx, const expert_bank_view& bank, const float* rows, int64_t n_rows,
                             const int32_t* pair_row, const int32_t* pair_expert, const float* pair_weight,
                             int64_t n_pairs, float* out, workspace& ws) {
  const int64_t d = bank.d, hidden = bank.hidden;
  sort_pairs_by_expert(pair_expert, n_pairs, bank.n_experts, ws);
  const auto& offsets = ws.expert_offsets;
  const auto& order = ws.pair_order;
  float* x = ws.scratch(ws.gathered, n_pairs * d);
  float* h = ws.scratch(ws.hidden, n_pairs * 2 * hidden);
  float* o = ws.scratch(ws.expert_out, n_pairs * d);
  for (int64_t s = 0; s < n_pairs; ++s) std::copy_n(rows + pair_row[order[s]] * d, d, x + s * d);
  for (int64_t e = 0; e < bank.n_experts; ++e) {
    const int64_t begin = offsets[e], m = offsets[e + 1] - begin;
    if (m == 0) continue;
    swiglu_forward(ctx, true, bank.gate_up_of(e), bank.down_of(e), d, hidden, x + begin * d, m,
                   h + begin * 2 * hidden, o + begin * d, false);
  }
  // Slots are in expert order, so each row receives its experts in ascending order.
  std::fill_n(out, n_rows * d, 0.0f);
  for (int64_t s = 0; s < n_pairs; ++s) {
    const int32_t p = order[s];
    float* dst = out + pair_row[p] * d;
    const float* src = o + s * d;
    const float wt = pair_weight[p];
    for (int64_t i = 0; i < d; ++i) dst[i] += src[i] * wt;
  }
}

}  // namespace sluice::moe
