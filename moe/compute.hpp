#pragma once
/// How the forward computes: which SIMD level runs the element-wise ops and the own matmul,
/// and which GEMM (OpenBLAS or our own kernel) runs the frame-batched dense layers and the
/// small per-expert products. Chosen per call; the model itself does not care.

#include <cstdint>
#include <memory>

#include "kernels/cpu/ops.hpp"
#include "moe/model_weights.hpp"

namespace sluice::moe {

enum class gemm_backend {
  automatic,  ///< the faster one for the SIMD level, as tools/bench/moe_bench measured it
  blas,       ///< OpenBLAS sgemm (its own packing; best for large products)
  own,        ///< kernels/cpu matmul (no packing, no call overhead; best for small products)
};

/// "auto", "blas", "own".
const char* to_string(gemm_backend b);

/// `automatic` resolved for a SIMD level. Measured with tools/bench/moe_bench --all on the
/// development machine (AMD Zen 5, Debian's OpenBLAS 0.3.21, one thread): with AVX-512 our
/// kernel is about 2x OpenBLAS at every product size of the model, so it runs everything;
/// with AVX2 only, OpenBLAS wins the frame-batched products and ours the per-expert ones;
/// the scalar reference loses to OpenBLAS everywhere.
gemm_backend resolve(gemm_backend b, kernels::cpu::simd_level level, bool per_expert);

class bf16_weights;

struct compute_options {
  kernels::cpu::simd_level simd = kernels::cpu::best_simd_level();
  gemm_backend dense = gemm_backend::automatic;    ///< linear layers over all frames of a call
  gemm_backend experts = gemm_backend::automatic;  ///< per-expert SwiGLU products, attention products
  /// `[model] math = "bf16"`: the model's weights packed for bf16 products (moe/bf16_weights.hpp);
  /// a product by one of them runs with bf16 inputs and f32 accumulation. Null: all f32.
  std::shared_ptr<const bf16_weights> bf16;
};

/// compute_options resolved to an op table; passed by reference through the forward.
class compute_ctx {
 public:
  explicit compute_ctx(const compute_options& o);

  const kernels::cpu::cpu_ops& ops() const { return *ops_; }
  gemm_backend dense_backend() const { return dense_; }
  gemm_backend small_backend() const { return small_; }
  /// True when products by the model's weights run in bf16 (compute_options::bf16).
  bool bf16() const { return bf16_ != nullptr; }

  /// The product on the dense backend / the small-product backend.
  void dense_matmul(const kernels::cpu::matmul_args& g) const { matmul(dense_, g); }
  void small_matmul(const kernels::cpu::matmul_args& g) const { matmul(small_, g); }

  /// y f32 [n, l.out] = x f32 [n, l.in] * l.w + l.b, on the dense backend.
  void linear(const linear_weights& l, const float* x, int64_t n, float* y) const;

 private:
  void matmul(gemm_backend b, const kernels::cpu::matmul_args& g) const;

  const kernels::cpu::cpu_ops* ops_;
  gemm_backend dense_, small_;
  std::shared_ptr<const bf16_weights> bf16_;
};

}  // namespace sluice::moe
