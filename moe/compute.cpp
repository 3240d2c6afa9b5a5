#include "moe/compute.hpp"

#include "kernels/cpu/bf16_gemm.hpp"
#include "kernels/cpu/gemm.hpp"
#include "moe/bf16_weights.hpp"

namespace sluice::moe {

const char* to_string(gemm_backend b) {
  switch (b) {
    case gemm_backend::automatic: return "auto";
    case gemm_backend::blas: return "blas";
    case gemm_backend::own: return "own";
  }
  return "?";
}

gemm_backend resolve(gemm_backend b, kernels::cpu::simd_level level, bool per_expert) {
  if (b != gemm_backend::automatic) return b;
  switch (level) {
    case kernels::cpu::simd_level::avx512: return gemm_backend::own;
    case kernels::cpu::simd_level::avx2: return per_expert ? gemm_backend::own : gemm_backend::blas;
    case kernels::cpu::simd_level::scalar: break;
  }
  return gemm_backend::blas;
}

compute_ctx::compute_ctx(const compute_options& o)
    : ops_(&kernels::cpu::cpu_ops_for(o.simd)),
      dense_(resolve(o.dense, ops_->level, false)),
      small_(resolve(o.experts, ops_->level, true)),
      bf16_(o.bf16) {}

void compute_ctx::matmul(gemm_backend b, const kernels::cpu::matmul_args& g) const {
  if (bf16_)
    if (const auto* packed = bf16_->find(g.b, g.k, g.n, g.ldb)) return kernels::cpu::matmul_bf16(g, *packed);
  if (b == gemm_backend::blas)
    kernels::cpu::blas_matmul(g);
  else
    ops_->matmul(g);
}

void compute_ctx::linear(const linear_weights& l, const float* x, int64_t n, float* y) const {
  kernels::cpu::matmul_args g;
  g.m = n;
  g.n = l.out;
  g.k = l.in;
  g.a = x;
  g.lda = l.in;
  g.b = l.w.data();
  g.ldb = l.out;
  g.c = y;
  g.ldc = l.out;
  g.bias = l.b.empty() ? nullptr : l.b.data();
  dense_matmul(g);
}

}  // namespace sluice::moe
