#include "moe/bf16_weights.hpp"

namespace sluice::moe {

void bf16_weights::add(const float* b, int64_t k, int64_t n, int64_t ldb) {
  if (!b || k <= 0 || n <= 0) return;
  const key at{b, k, n, ldb};
  if (map_.count(at)) return;
  map_.emplace(at, kernels::cpu::pack_bf16(b, k, n, ldb));
}

const kernels::cpu::bf16_matrix* bf16_weights::find(const float* b, int64_t k, int64_t n, int64_t ldb) const {
  const auto it = map_.find(key{b, k, n, ldb});
  return it == map_.end() ? nullptr : &it->second;
}

std::size_t bf16_weights::bytes() const {
  std::size_t total = 0;
  for (const auto& [k, m] : map_) total += m.bytes();
  return total;
}

std::shared_ptr<const bf16_weights> bf16_weights::build(std::shared_ptr<const acoustic_model> model) {
  auto out = std::make_shared<bf16_weights>();
  if (!model) return out;
  const model_weights& w = model->weights();
  const int64_t d_model = model->arch().d_model;
  auto linear = [&](const linear_weights& l) { out->add(l.w.data(), l.in, l.out, l.out); };
  // A SwiGLU's gate and up halves of gate_up [d, 2 h] and its down [h, d] (routed_experts.cpp).
  auto swiglu = [&](const float* gate_up, const float* down, int64_t d, int64_t h) {
    out->add(gate_up, d, h, 2 * h);
    out->add(gate_up + h, d, h, 2 * h);
    out->add(down, h, d, d);
  };
  const auto& f = w.frontend;
  const int64_t c = static_cast<int64_t>(f.conv1_bias.size());
  if (c > 0) {
    out->add(f.conv1.data(), static_cast<int64_t>(f.conv1.size()) / c, c, c);
    out->add(f.conv2.data(), static_cast<int64_t>(f.conv2.size()) / c, c, c);
  }
  linear(f.out);
  for (const auto& b : w.blocks) {
    linear(b.qkv);
    linear(b.proj);
    // The routers stay f32 (not registered): their products are small, and expert choices
    // then move only as far as their inputs do.
    for (const auto& s : b.moe.shared) swiglu(s.gate_up.data(), s.down.data(), d_model, s.hidden);
    const auto& e = b.moe.experts;
    for (int64_t i = 0; i < e.n_experts; ++i) swiglu(e.gate_up_of(i), e.down_of(i), e.d, e.hidden);
  }
  linear(w.ctc);
  out->model_ = std::move(model);
  return out;
}

}  // namespace sluice::moe
