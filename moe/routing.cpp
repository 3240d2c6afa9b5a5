#include "moe/routing.hpp"

#include <algorithm>
#include <limits>

#include "moe/workspace.hpp"

namespace sluice::moe {
namespace {

// model.py clamps the sum of the chosen gate weights before normalising.
constexpr float min_weight_sum = 1e-9f;

// An expert's unnormalised gate weight: its level-2 score times its group's level-1 score.
float raw_weight(const float* p1, const float* p2, int32_t e, int64_t per_group) {
  return p2[e] * p1[e / per_group];
}

// The sum of a token's unnormalised gate weights over its chosen experts, in model.py's order
// and clamp: the normaliser of route_tokens and of replacement_weight alike.
float weight_sum(const float* p1, const float* p2, const int32_t* chosen, int k, int64_t per_group) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += raw_weight(p1, p2, chosen[j], per_group);
  return std::max(sum, min_weight_sum);
}

}  // namespace

void top_k_indices(const float* scores, int64_t n, int k, int32_t* out) {
  // k is a handful (top_groups, top_k): keep the best k in order by insertion. A score enters
  // only when strictly greater than a kept one, so among equals the lower index stays first.
  int kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float s = scores[i];
    if (kept == k && !(s > scores[out[k - 1]])) continue;
    int pos = kept < k ? kept++ : k - 1;
    while (pos > 0 && s > scores[out[pos - 1]]) {
      out[pos] = out[pos - 1];
      --pos;
    }
    out[pos] = static_cast<int32_t>(i);
  }
}

void route_tokens(const compute_ctx& ctx, const moe_weights& w, const architecture& arch, const float* y,
                  const float* acoustic, const float* context, int64_t n, workspace& ws, routing& r) {
  const int64_t d = arch.d_model, na = arch.n_acoustic, g = arch.n_groups, e = arch.n_routed;
  const auto& ops = ctx.ops();

  r.n = n;
  r.top_groups = arch.top_groups;
  r.top_k = arch.top_k;
  r.n_groups = g;
  r.n_experts = e;
  ws.fit(r.group_scores, n * g);
  ws.fit(r.expert_scores, n * e);
  float* s1 = r.group_scores.data();
  float* s2 = r.expert_scores.data();
  // The routers read concatenations, [y, acoustic] and [y, context]: each is two products
  // over the matching rows of the weight, summed, instead of a copy of the inputs.
  auto concat_linear = [&](const linear_weights& l, const float* second, int64_t width, float* out) {
    ctx.dense_matmul({n, l.out, d, y, d, l.w.data(), l.out, out, l.out, l.b.data()});
    kernels::cpu::matmul_args tail{n, l.out, width, second, width, l.w.data() + d * l.out, l.out, out, l.out};
    tail.accumulate = true;
    ctx.dense_matmul(tail);
  };
  concat_linear(w.router1, acoustic, na, s1);
  concat_linear(w.router2, context, d, s2);
  ops.sigmoid(s1, n * g);
  ops.sigmoid(s2, n * e);
  select_experts(w.group_bias.data(), w.expert_bias.data(), ws, r);
}

void select_experts(const float* group_bias, const float* expert_bias, workspace& ws, routing& r) {
  const int64_t n = r.n, g = r.n_groups, e = r.n_experts, per_group = r.experts_per_group();
  const float* s1 = r.group_scores.data();
  const float* s2 = r.expert_scores.data();
  ws.fit(r.groups, n * r.top_groups);
  ws.fit(r.experts, n * r.top_k);
  ws.fit(r.weights, n * r.top_k);
  float* sel_g = ws.scratch(ws.select_g, g);
  float* sel_e = ws.scratch(ws.select_e, e);
  for (int64_t t = 0; t < n; ++t) {
    const float* p1 = s1 + t * g;
    const float* p2 = s2 + t * e;
    for (int64_t i = 0; i < g; ++i) sel_g[i] = p1[i] + group_bias[i];
    int32_t* groups = r.groups.data() + t * r.top_groups;
    top_k_indices(sel_g, g, r.top_groups, groups);
    std::fill_n(sel_e, e, -std::numeric_limits<float>::infinity());
    for (int j = 0; j < r.top_groups; ++j)
      for (int64_t i = groups[j] * per_group; i < (groups[j] + 1) * per_group; ++i) sel_e[i] = p2[i] + expert_bias[i];
    int32_t* experts = r.experts.data() + t * r.top_k;
    top_k_indices(sel_e, e, r.top_k, experts);
    float* wt = r.weights.data() + t * r.top_k;
    const float sum = weight_sum(p1, p2, experts, r.top_k, per_group);
    for (int j = 0; j < r.top_k; ++j) wt[j] = raw_weight(p1, p2, experts[j], per_group);
    for (int j = 0; j < r.top_k; ++j) wt[j] /= sum;
  }
}

int32_t next_best_expert(const routing& r, const float* expert_bias, int64_t t, const int32_t* taken,
                         const uint8_t* full) {
  const int64_t per_group = r.experts_per_group();
  const float* p2 = r.expert_scores.data() + t * r.n_experts;
  const int32_t* groups = r.groups.data() + t * r.top_groups;
  int32_t best = -1;
  float best_score = 0.0f;
  for (int j = 0; j < r.top_groups; ++j)
    for (int64_t i = groups[j] * per_group; i < (groups[j] + 1) * per_group; ++i) {
      const auto e = static_cast<int32_t>(i);
      if (full[e] || std::find(taken, taken + r.top_k, e) != taken + r.top_k) continue;
      const float s = p2[e] + expert_bias[e];
      if (best < 0 || s > best_score || (s == best_score && e < best)) {
        best = e;
        best_score = s;
      }
    }
  return best;
}

float replacement_weight(const routing& r, int64_t t, int32_t e) {
  const int64_t per_group = r.experts_per_group();
  const float* p1 = r.group_scores.data() + t * r.n_groups;
  const float* p2 = r.expert_scores.data() + t * r.n_experts;
  const int32_t* chosen = r.experts.data() + t * r.top_k;
  return raw_weight(p1, p2, e, per_group) / weight_sum(p1, p2, chosen, r.top_k, per_group);
}

}  // namespace sluice::moe
