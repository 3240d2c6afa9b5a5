#pragma once
/// Single-precision GEMM on the CPU: C = alpha * op(A) * op(B) + beta * C, row-major.

#include <cstdint>

namespace sluice::kernels::cpu {

struct gemm_args {
  int64_t m = 0, n = 0, k = 0;  ///< op(A) is [m, k], op(B) is [k, n], C is [m, n]
  const float* a = nullptr;     ///< f32 [m, k] (or [k, m] when trans_a)
  const float* b = nullptr;     ///< f32 [k, n] (or [n, k] when trans_b; the nn.Linear weight layout)
  float* c = nullptr;           ///< f32 [m, n]
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
};

/// The scalar reference every faster path is tested against (double accumulation).
void gemm_reference(const gemm_args& g);

/// The fast path: OpenBLAS sgemm (threads are OpenBLAS's; callers that own threads set
/// OPENBLAS_NUM_THREADS=1 and parallelise above this).
void gemm(const gemm_args& g);

}  // namespace sluice::kernels::cpu
