// AVX2 + FMA paths of ops.hpp. Every function carries the target attribute (no file-wide flags),
// so this file links into binaries that still start on CPUs without AVX2; cpu_ops_for() only
// hands this table out when the CPU has it.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vec_exp_consts.hpp"

#define SLUICE_AVX2 __attribute__((target("avx2,fma")))

namespace sluice::kernels::cpu {
namespace {

constexpr int lanes = 8;
// Register tile of the matmul: 4 rows x 3 vectors = 12 accumulators + 3 B vectors + 1
// broadcast of the 16 ymm registers.
constexpr int tile_rows = 4;
constexpr int tile_vecs = 3;
constexpr int64_t row_block = 128;
constexpr int exponent_bias = 127;
constexpr int mantissa_bits = 23;

// All-ones in the first min(n, 8) lanes.
SLUICE_AVX2 inline __m256i tail_mask(int64_t n) {
  const int k = static_cast<int>(std::min<int64_t>(n, lanes));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

SLUICE_AVX2 inline __m256 load(const float* p, __m256i mk, bool full) {
  return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mk);
}

SLUICE_AVX2 inline void store(float* p, __m256i mk, bool full, __m256 v) {
  if (full)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, mk, v);
}

SLUICE_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

SLUICE_AVX2 inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

SLUICE_AVX2 inline __m256 exp256(__m256 x) {
  using namespace exp_consts;
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(min_arg)), _mm256_set1_ps(max_arg));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ln2_hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ln2_lo), r);
  __m256 p = _mm256_set1_ps(p0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(p1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(p2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(p3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(p4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(p5));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n built in the exponent field; the clamp keeps n within the normal range.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(exponent_bias)),
                                      mantissa_bits);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

template <int R, int V>
SLUICE_AVX2 void matmul_tile(const matmul_args& g, int64_t i0, int64_t j0, int64_t last_cols) {
  const __m256i last = tail_mask(last_cols);
  const bool last_full = last_cols == lanes;
  __m256 acc[R][V];
  float* c = g.c + i0 * g.ldc + j0;
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const bool full = v < V - 1 || last_full;
    const __m256 init = g.bias ? load(g.bias + j0 + v * lanes, last, full) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      acc[r][v] = g.accumulate ? _mm256_add_ps(load(c + r * g.ldc + v * lanes, last, full), init) : init;
  }
  const float* a = g.a + i0 * g.lda;
  const float* b = g.b + j0;
  for (int64_t p = 0; p < g.k; ++p) {
    __m256 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = load(b + p * g.ldb + v * lanes, last, v < V - 1 || last_full);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * g.lda + p);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) store(c + r * g.ldc + v * lanes, last, v < V - 1 || last_full, acc[r][v]);
}

using tile_fn = void (*)(const matmul_args&, int64_t, int64_t, int64_t);

template <int R, int... V>
constexpr std::array<tile_fn, sizeof...(V)> tile_row(std::integer_sequence<int, V...>) {
  return {&matmul_tile<R, V + 1>...};
}

template <int... R>
constexpr std::array<std::array<tile_fn, tile_vecs>, sizeof...(R)> tile_table(std::integer_sequence<int, R...>) {
  return {tile_row<R + 1>(std::make_integer_sequence<int, tile_vecs>{})...};
}

constexpr auto tiles = tile_table(std::make_integer_sequence<int, tile_rows>{});

SLUICE_AVX2 void matmul_avx2(const matmul_args& g) {
  constexpr int64_t block_cols = tile_vecs * lanes;
  for (int64_t ib = 0; ib < g.m; ib += row_block) {
    const int64_t i_end = std::min(g.m, ib + row_block);
    for (int64_t j0 = 0; j0 < g.n; j0 += block_cols) {
      const int64_t cols = std::min(g.n - j0, block_cols);
      const int64_t vecs = (cols + lanes - 1) / lanes;
      const int64_t last_cols = cols - (vecs - 1) * lanes;
      for (int64_t i0 = ib; i0 < i_end; i0 += tile_rows) {
        const int64_t rows = std::min<int64_t>(tile_rows, i_end - i0);
        tiles[rows - 1][vecs - 1](g, i0, j0, last_cols);
      }
    }
  }
}

SLUICE_AVX2 void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += lanes) {
    const bool full = n - i >= lanes;
    const __m256i mk = tail_mask(n - i);
    const __m256 gv = load(gate + i, mk, full), uv = load(up + i, mk, full);
    const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), gv)));
    store(out + i, mk, full, _mm256_mul_ps(_mm256_div_ps(gv, den), uv));
  }
}

SLUICE_AVX2 void sigmoid_avx2(float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += lanes) {
    const bool full = n - i >= lanes;
    const __m256i mk = tail_mask(n - i);
    const __m256 v = load(x + i, mk, full);
    const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), v)));
    store(x + i, mk, full, _mm256_div_ps(_mm256_set1_ps(1.0f), den));
  }
}

SLUICE_AVX2 void layer_norm_avx2(const float* x, const float* gamma, const float* beta, float* out, int64_t rows,
                                 int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    __m256 s = _mm256_setzero_ps();
    for (int64_t i = 0; i < dim; i += lanes) s = _mm256_add_ps(s, load(xr + i, tail_mask(dim - i), dim - i >= lanes));
    const float mean = hsum(s) / static_cast<float>(dim);
    const __m256 mv = _mm256_set1_ps(mean);
    __m256 q = _mm256_setzero_ps();
    for (int64_t i = 0; i < dim; i += lanes) {
      const __m256i mk = tail_mask(dim - i);
      const __m256 d = _mm256_and_ps(_mm256_sub_ps(load(xr + i, mk, dim - i >= lanes), mv), _mm256_castsi256_ps(mk));
      q = _mm256_fmadd_ps(d, d, q);
    }
    const float var = hsum(q) / static_cast<float>(dim);
    const __m256 rstd = _mm256_set1_ps(1.0f / std::sqrt(var + eps));
    for (int64_t i = 0; i < dim; i += lanes) {
      const bool full = dim - i >= lanes;
      const __m256i mk = tail_mask(dim - i);
      const __m256 d = _mm256_mul_ps(_mm256_sub_ps(load(xr + i, mk, full), mv), rstd);
      store(o + i, mk, full, _mm256_fmadd_ps(d, load(gamma + i, mk, full), load(beta + i, mk, full)));
    }
  }
}

SLUICE_AVX2 void softmax_avx2(float* x, int64_t n) {
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 m = neg_inf;
  for (int64_t i = 0; i < n; i += lanes) {
    const __m256i mk = tail_mask(n - i);
    m = _mm256_max_ps(m, _mm256_blendv_ps(neg_inf, load(x + i, mk, n - i >= lanes), _mm256_castsi256_ps(mk)));
  }
  const __m256 mx = _mm256_set1_ps(hmax(m));
  __m256 s = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += lanes) {
    const bool full = n - i >= lanes;
    const __m256i mk = tail_mask(n - i);
    const __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(load(x + i, mk, full), mx)), _mm256_castsi256_ps(mk));
    s = _mm256_add_ps(s, e);
    store(x + i, mk, full, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / hsum(s));
  for (int64_t i = 0; i < n; i += lanes) {
    const bool full = n - i >= lanes;
    const __m256i mk = tail_mask(n - i);
    store(x + i, mk, full, _mm256_mul_ps(load(x + i, mk, full), inv));
  }
}

SLUICE_AVX2 void exp_avx2(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += lanes) {
    const bool full = n - i >= lanes;
    const __m256i mk = tail_mask(n - i);
    store(out + i, mk, full, exp256(load(x + i, mk, full)));
  }
}

SLUICE_AVX2 void rope_avx2(float* x, const float* cos2, const float* sin2, int64_t head_dim, int64_t heads) {
  constexpr int swap_pairs = 0xB1;  // lanes (1, 0, 3, 2) in every 128-bit group
  for (int64_t i = 0; i < head_dim; i += lanes) {
    const bool full = head_dim - i >= lanes;
    const __m256i mk = tail_mask(head_dim - i);
    const __m256 c = load(cos2 + i, mk, full), s = load(sin2 + i, mk, full);
    for (int64_t h = 0; h < heads; ++h) {
      float* p = x + h * head_dim + i;
      const __m256 v = load(p, mk, full);
      store(p, mk, full, _mm256_fmadd_ps(_mm256_permute_ps(v, swap_pairs), s, _mm256_mul_ps(v, c)));
    }
  }
}

}  // namespace

const cpu_ops& avx2_ops() {
  static const cpu_ops ops{simd_level::avx2, matmul_avx2,  silu_mul_avx2, layer_norm_avx2,
                           softmax_avx2,     sigmoid_avx2, exp_avx2,      rope_avx2};
  return ops;
}

}  // namespace sluice::kernels::cpu
