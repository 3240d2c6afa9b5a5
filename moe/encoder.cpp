#include "moe/encoder.hpp"

#include <algorithm>

namespace sluice::moe {
namespace {

constexpr float layer_norm_eps = 1e-5f;  // torch.nn.LayerNorm's default

void append_sorted(const std::vector<int32_t>& rows, int64_t n, int width, std::vector<int32_t>& dst) {
  const auto at = dst.size();
  dst.insert(dst.end(), rows.begin(), rows.begin() + n * width);
  for (int64_t t = 0; t < n; ++t) std::sort(dst.begin() + at + t * width, dst.begin() + at + (t + 1) * width);
}

}  // namespace

void encoder_forward(const compute_ctx& ctx, const acoustic_model& model, attention_window window, int64_t p0,
                     float* x, const float* acoustic, int64_t n, std::vector<layer_state>& layers, int64_t keep,
                     float* logits, std::vector<layer_trace>* trace, workspace& ws) {
  const auto& arch = model.arch();
  const auto& w = model.weights();
  const auto& ops = ctx.ops();
  const int64_t d = arch.d_model;
  if (n == 0) return;
  const rope_table rope = make_rope_table(p0, n, arch.head_dim(), arch.rope_base);
  float* xn = scratch(ws.xn, n * d);
  float* delta = scratch(ws.delta, n * d);
  for (int l = 0; l < arch.n_layers; ++l) {
    const block_weights& b = w.blocks[l];
    ops.layer_norm(x, b.ln1.gamma.data(), b.ln1.beta.data(), xn, n, d, layer_norm_eps);
    attention_forward(ctx, b, arch, window, p0, xn, n, rope, layers[l].kv, keep, delta, ws);
    for (int64_t i = 0; i < n * d; ++i) x[i] += delta[i];
    ops.layer_norm(x, b.ln2.gamma.data(), b.ln2.beta.data(), xn, n, d, layer_norm_eps);
    moe_forward(ctx, b.moe, arch, xn, acoustic, n, layers[l].context, delta, ws);
    for (int64_t i = 0; i < n * d; ++i) x[i] += delta[i];
    if (trace) {
      auto& t = (*trace)[l];
      t.out.insert(t.out.end(), x, x + n * d);
      append_sorted(ws.route.experts, n, ws.route.top_k, t.experts);
      append_sorted(ws.route.groups, n, ws.route.top_groups, t.groups);
    }
  }
  ops.layer_norm(x, w.ln_out.gamma.data(), w.ln_out.beta.data(), xn, n, d, layer_norm_eps);
  ctx.linear(w.ctc, xn, n, logits);
}

}  // namespace sluice::moe
