#pragma once
/// The CPU compute ops the model forward is built from, one table per SIMD level.
///
/// Every op exists in a scalar version (the reference) and in AVX2 and AVX-512 versions that
/// tests compare against it. Callers pick a table once (`cpu_ops_for(best_simd_level())`) and
/// pass it down explicitly; nothing here keeps state, allocates or starts threads.
/// Arrays are row-major f32; `ld*` are leading dimensions in elements.

#include <cstdint>

#include "kernels/cpu/simd.hpp"

namespace sluice::kernels::cpu {

/// C = A * B (+ bias) (+ C when `accumulate`), for the small and medium products of the
/// model (per-expert tokens x weights). B is [k, n]: an nn.Linear weight [out, in] stored
/// transposed, so each row of B is contiguous over the output columns.
struct matmul_args {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;     ///< f32 [m, k], row stride lda
  int64_t lda = 0;
  const float* b = nullptr;     ///< f32 [k, n], row stride ldb
  int64_t ldb = 0;
  float* c = nullptr;           ///< f32 [m, n], row stride ldc
  int64_t ldc = 0;
  const float* bias = nullptr;  ///< f32 [n], added to every row; may be null
  bool accumulate = false;      ///< add to C instead of overwriting it
};

/// One op table. All function pointers are non-null.
struct cpu_ops {
  simd_level level = simd_level::scalar;

  /// See matmul_args. C must not alias A or B.
  void (*matmul)(const matmul_args& args) = nullptr;

  /// out[i] = silu(gate[i]) * up[i], n values; `out` may alias `gate` or `up`.
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n) = nullptr;

  /// Row-wise LayerNorm: out[r] = (x[r] - mean) / sqrt(var + eps) * gamma + beta, with the
  /// biased variance (as torch.nn.LayerNorm). x, out: f32 [rows, dim] (contiguous; may alias);
  /// gamma, beta: f32 [dim].
  void (*layer_norm)(const float* x, const float* gamma, const float* beta, float* out, int64_t rows,
                     int64_t dim, float eps) = nullptr;

  /// In-place softmax of one row of n > 0 values.
  void (*softmax)(float* x, int64_t n) = nullptr;

  /// In-place logistic sigmoid of n values.
  void (*sigmoid)(float* x, int64_t n) = nullptr;

  /// out[i] = e^x[i], n values (about 2 ulp; inputs clamp to [-87.3, 88]); `out` may alias `x`.
  void (*exp)(const float* x, float* out, int64_t n) = nullptr;

  /// Rotary position embedding of `heads` consecutive head vectors of head_dim (even) values,
  /// all at the same position: each pair (x[2i], x[2i+1]) of a head turns by angle a_i,
  /// x' = x * cos2 + swap_pairs(x) * sin2, with cos2 = [cos a_0, cos a_0, cos a_1, cos a_1, ...]
  /// and sin2 = [-sin a_0, sin a_0, -sin a_1, sin a_1, ...] (f32 [head_dim]).
  void (*rope)(float* x, const float* cos2, const float* sin2, int64_t head_dim, int64_t heads) = nullptr;
};

/// The table for `level`; a level this CPU does not run falls back to the best one it does.
const cpu_ops& cpu_ops_for(simd_level level);

/// The tables for each level (used by cpu_ops_for and tests); only call the vector ones when
/// simd_supported() says so.
const cpu_ops& scalar_ops();
const cpu_ops& avx2_ops();
const cpu_ops& avx512_ops();

}  // namespace sluice::kernels::cpu
