#include "moe/moe_layer.hpp"

#include <algorithm>

#include "moe/routed_experts.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {

void causal_context(const float* y, int64_t n, int64_t d, int ctx_frames, context_cache& cache, float* context) {
  const int64_t k = ctx_frames, r = cache.n;
  // Rows of [cache; y]: row i < r is cache row i, row r + t is y row t.
  auto row = [&](int64_t i) { return i < r ? cache.rows.data() + i * d : y + (i - r) * d; };
  for (int64_t t = 0; t < n; ++t) {
    const int64_t last = r + t, first = std::max<int64_t>(0, last - k + 1);
    float* c = context + t * d;
    std::fill_n(c, d, 0.0f);
    for (int64_t i = first; i <= last; ++i) {
      const float* src = row(i);
      for (int64_t j = 0; j < d; ++j) c[j] += src[j];
    }
    const float inv = 1.0f / static_cast<float>(last - first + 1);
    for (int64_t j = 0; j < d; ++j) c[j] *= inv;
  }
  // The cache keeps the last k - 1 rows of [cache; y], in place: the ones still from the cache
  // move to the front (forward copies, as the destination is never past the source), then the
  // rows of y follow.
  const int64_t keep = std::min<int64_t>(k - 1, r + n);
  const int64_t from_cache = std::max<int64_t>(0, keep - n);
  if (cache.rows.size() < static_cast<std::size_t>(keep * d)) cache.rows.resize(keep * d);
  if (r > from_cache) std::copy_n(cache.rows.begin() + (r - from_cache) * d, from_cache * d, cache.rows.begin());
  std::copy_n(y + (n - (keep - from_cache)) * d, (keep - from_cache) * d, cache.rows.begin() + from_cache * d);
  cache.n = keep;
}

void preallocate_dense(const architecture& arch, const step_bounds& b, workspace& ws) {
  const int64_t n = b.tokens;
  ws.commit(ws.shared_hidden, n * 2 * arch.shared_hidden);
  ws.commit(ws.context, n * arch.d_model);
  routing& r = ws.route;
  ws.commit(r.group_scores, n * arch.n_groups);
  ws.commit(r.expert_scores, n * arch.n_routed);
  ws.commit(r.groups, n * arch.top_groups);
  ws.commit(r.experts, n * arch.top_k);
  ws.commit(r.weights, n * arch.top_k);
  ws.commit(ws.select_g, arch.n_groups);
  ws.commit(ws.select_e, arch.n_routed);
}

void moe_dense_forward(const compute_ctx& ctx, const moe_weights& w, const architecture& arch,
                       std::span<const context_segment> segs, const float* y, const float* acoustic, int64_t n_rows,
                       float* shared_out, workspace& ws) {
  const int64_t d = arch.d_model;
  std::fill_n(shared_out, n_rows * d, 0.0f);
  for (const auto& s : w.shared) {
    float* h = ws.scratch(ws.shared_hidden, n_rows * 2 * s.hidden);
    swiglu_forward(ctx, false, s.gate_up.data(), s.down.data(), d, s.hidden, y, n_rows, h, shared_out, true);
  }
  float* context = ws.scratch(ws.context, n_rows * d);
  for (const auto& seg : segs)
    causal_context(y + seg.row0 * d, seg.n, d, arch.ctx_frames, *seg.cache, context + seg.row0 * d);
  route_tokens(ctx, w, arch, y, acoustic, context, n_rows, ws, ws.route);
}

}  // namespace sluice::moe
