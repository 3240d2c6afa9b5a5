#pragma once
/// Single-precision GEMM on the CPU: C = alpha * op(A) * op(B) + beta * C, row-major.

#include <cstdint>

#include "kernels/cpu/ops.hpp"

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

/// cpu_ops::matmul's contract (leading dimensions, bias, accumulate) on OpenBLAS sgemm, so the
/// model can use either for any product and benchmarks can compare them.
void blas_matmul(const matmul_args& g);

/// Sets OpenBLAS's own thread count (a process-wide setting). The engine sets 1 when lanes run
/// the model (actors/engine.cpp): the lanes are its parallelism. Tools and benchmarks too.
void set_blas_threads(int n);
/// OpenBLAS's thread count now.
int blas_threads();

}  // namespace sluice::kernels::cpu
