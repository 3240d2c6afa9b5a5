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
  const int64_t keep = std::min<int64_t>(k - 1, r + n);
  std::vector<float> next(keep * d);
  for (int64_t i = 0; i < keep; ++i) std::copy_n(row(r + n - keep + i), d, next.data() + i * d);
  cache.rows = std::move(next);
  cache.n = keep;
}

void moe_forward(const compute_ctx& ctx, const moe_weights& w, const architecture& arch, const float* y,
                 const float* acoustic, int64_t n, context_cache& cache, float* out, workspace& ws) {
  const int64_t d = arch.d_model;
  std::fill_n(out, n * d, 0.0f);
  for (const auto& s : w.shared) {
    float* h = scratch(ws.shared_hidden, n * 2 * s.hidden);
    swiglu_forward(ctx, false, s.gate_up.data(), s.down.data(), d, s.hidden, y, n, h, out, true);
  }
  float* context = scratch(ws.context, n * d);
  causal_context(y, n, d, arch.ctx_frames, cache, context);
  route_tokens(ctx, w, arch, y, acoustic, context, n, ws, ws.route);
  routed_experts_forward(ctx, w.experts, ws.route, y, out, ws);
}

}  // namespace sluice::moe
