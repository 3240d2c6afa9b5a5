#pragma once
/// Matrix products with bf16 inputs and f32 accumulation on the CPU (AVX-512 BF16, the
/// VDPBF16PS dot product of bf16 pairs): C = bf16(A) * bf16(B) (+ bias) (+ C), A and C f32 in
/// memory, B a weight packed once at load. Twice the multiply-adds per instruction of the f32
/// kernel and half its weight bytes; each input is rounded to 8 significant bits, so a product
/// moves by at most about 2^-8 of sum |a_i b_i| from the f32 one (tests/kernels derive their
/// tolerances from that). Our own kernel: the products of this model are small (d = 144) and
/// Debian's OpenBLAS 0.3.21 has no bf16 GEMM.

#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.hpp"

namespace sluice::kernels::cpu {

/// f32 -> bf16, rounded to nearest even (NaN stays NaN, infinities stay infinite).
uint16_t to_bf16(float x);
/// bf16 -> f32 (exact).
float from_bf16(uint16_t x);

/// B f32 [k, n] packed for the kernel: row p of `pairs` holds, for each column j, rows 2p and
/// 2p + 1 of B as one 32-bit word (low half row 2p); an odd k pads the last pair with zero.
struct bf16_matrix {
  int64_t k = 0, n = 0;
  std::vector<uint32_t> pairs;  ///< [(k + 1) / 2, n]
  std::size_t bytes() const { return pairs.size() * sizeof(uint32_t); }
};

/// Packs B f32 [k, n] with row stride ldb (>= n).
bf16_matrix pack_bf16(const float* b, int64_t k, int64_t n, int64_t ldb);

/// True when this CPU has AVX-512F and AVX-512 BF16 (the fast path of matmul_bf16).
bool bf16_supported();

/// C = bf16(A) * B (+ bias) (+ C when g.accumulate), f32 accumulation. Uses g.m, g.a, g.lda,
/// g.c, g.ldc, g.bias, g.accumulate; g.k and g.n must equal b.k and b.n (g.b and g.ldb are not
/// read). The AVX-512 BF16 kernel where bf16_supported(), else matmul_bf16_reference. Not
/// reentrant across threads on one call, reentrant across calls (per-thread scratch).
void matmul_bf16(const matmul_args& g, const bf16_matrix& b);

/// The scalar twin: A rounded to bf16 as the kernel does, products exact, sums in double. One
/// difference: the AVX-512 BF16 instructions treat bf16 inputs below 2^-126 (denormals, |x| <
/// 1.2e-38) as zero, the twin keeps them.
void matmul_bf16_reference(const matmul_args& g, const bf16_matrix& b);

}  // namespace sluice::kernels::cpu
