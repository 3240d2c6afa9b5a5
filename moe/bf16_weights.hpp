#pragma once
/// The model's weight matrices packed for the bf16 kernel (kernels/cpu/bf16_gemm.hpp), built
/// once per model when `[model] math = "bf16"`, and found by the operand views the forward
/// passes to its products: compute_ctx::matmul runs a product whose B is one of these views
/// with bf16 inputs and f32 accumulation, and every other product (attention's
/// activation x activation products, weights copied elsewhere) in f32 as before.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "kernels/cpu/bf16_gemm.hpp"
#include "moe/acoustic_model.hpp"

namespace sluice::moe {

class bf16_weights {
 public:
  /// Every view of the weights that the forward multiplies by, except the routers' (kept f32):
  /// linear layers (attention qkv and output, CTC head, front-end output), the shared and
  /// routed experts' gate and up halves and down matrices, the two convolutions.
  /// The table keeps `model` alive: its keys are addresses in the model's weights.
  static std::shared_ptr<const bf16_weights> build(std::shared_ptr<const acoustic_model> model);

  /// The packed copy of B [k, n] (row stride ldb) starting at `b`, or null when `b` is not the
  /// start of such a view (then the product runs in f32).
  const kernels::cpu::bf16_matrix* find(const float* b, int64_t k, int64_t n, int64_t ldb) const;

  std::size_t views() const { return map_.size(); }
  /// Bytes of packed weights (half the f32 bytes of the views, rounded up per odd k).
  std::size_t bytes() const;

  /// Registers the view B [k, n] with row stride ldb at `b` (build() calls it; tests too).
  void add(const float* b, int64_t k, int64_t n, int64_t ldb);

 private:
  struct key {
    const float* b;
    int64_t k, n, ldb;
    bool operator==(const key& o) const { return b == o.b && k == o.k && n == o.n && ldb == o.ldb; }
  };
  struct key_hash {
    std::size_t operator()(const key& x) const noexcept {
      auto h = std::hash<const void*>()(x.b);
      for (int64_t v : {x.k, x.n, x.ldb}) h = h * 1000003u ^ std::hash<int64_t>()(v);
      return h;
    }
  };
  std::unordered_map<key, kernels::cpu::bf16_matrix, key_hash> map_;
  std::shared_ptr<const acoustic_model> model_;  ///< whose weights the keys point into (null: add() only)
};

}  // namespace sluice::moe
