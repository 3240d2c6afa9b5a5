// AVX-512F paths of ops.hpp. Every function carries the target attribute (no file-wide flags),
// so this file links into binaries that still start on CPUs without AVX-512; cpu_ops_for()
// only hands this table out when the CPU has it.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "kernels/cpu/avx512_tiles.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vec_exp_consts.hpp"

// GCC 12's avx512fintrin.h initialises "undefined" vectors from themselves, which trips
// -Wmaybe-uninitialized wherever they inline (GCC bug 105593, fixed in 12.3/13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define SLUICE_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace sluice::kernels::cpu {
namespace {

using namespace avx512_tiles;

SLUICE_AVX512 inline __mmask16 tail_mask(int64_t n) {
  return n >= lanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

SLUICE_AVX512 inline __m512 exp512(__m512 x) {
  using namespace exp_consts;
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(min_arg)), _mm512_set1_ps(max_arg));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(log2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ln2_hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ln2_lo), r);
  __m512 p = _mm512_set1_ps(p0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(p1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(p2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(p3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(p4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(p5));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// Loads and stores of vector v of a tile: plain unless it is the last one of a ragged tile
// (masked loads cost more and do not fold into the FMAs).
template <bool Ragged>
SLUICE_AVX512 inline __m512 load_v(const float* p, bool last, __mmask16 mk) {
  if constexpr (Ragged) return last ? _mm512_maskz_loadu_ps(mk, p) : _mm512_loadu_ps(p);
  return _mm512_loadu_ps(p);
}

template <bool Ragged>
SLUICE_AVX512 inline void store_v(float* p, bool last, __mmask16 mk, __m512 v) {
  if constexpr (Ragged)
    if (last) return _mm512_mask_storeu_ps(p, mk, v);
  _mm512_storeu_ps(p, v);
}

template <int R, int V, bool Ragged>
SLUICE_AVX512 void matmul_tile(const matmul_args& g, int64_t i0, int64_t j0, __mmask16 mk) {
  __m512 acc[R][V];
  float* c = g.c + i0 * g.ldc + j0;
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    const __m512 init = g.bias ? load_v<Ragged>(g.bias + j0 + v * lanes, v == V - 1, mk) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      acc[r][v] = g.accumulate ? _mm512_add_ps(load_v<Ragged>(c + r * g.ldc + v * lanes, v == V - 1, mk), init) : init;
  }
  const float* a = g.a + i0 * g.lda;
  const float* b = g.b + j0;
  for (int64_t p = 0; p < g.k; ++p) {
    __m512 bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) bv[v] = load_v<Ragged>(b + p * g.ldb + v * lanes, v == V - 1, mk);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * g.lda + p]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) store_v<Ragged>(c + r * g.ldc + v * lanes, v == V - 1, mk, acc[r][v]);
}

using tile_fn = void (*)(const matmul_args&, int64_t, int64_t, __mmask16);

template <int R, int V, bool Ragged>
struct tile_of {
  static constexpr tile_fn fn = &matmul_tile<R, V, Ragged>;
};

constexpr auto tiles = make_table<tile_fn, tile_of>();

SLUICE_AVX512 void matmul_avx512(const matmul_args& g) {
  for_each_tile(tiles, g.m, g.n, [&](tile_fn f, int64_t i0, int64_t j0, __mmask16 mk) { f(g, i0, j0, mk); });
}

SLUICE_AVX512 void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += lanes) {
    const __mmask16 mk = tail_mask(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(mk, gate + i);
    const __m512 uv = _mm512_maskz_loadu_ps(mk, up + i);
    const __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv)));
    _mm512_mask_storeu_ps(out + i, mk, _mm512_mul_ps(_mm512_div_ps(gv, den), uv));
  }
}

SLUICE_AVX512 void sigmoid_avx512(float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += lanes) {
    const __mmask16 mk = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(mk, x + i);
    const __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), exp512(_mm512_sub_ps(_mm512_setzero_ps(), v)));
    _mm512_mask_storeu_ps(x + i, mk, _mm512_div_ps(_mm512_set1_ps(1.0f), den));
  }
}

SLUICE_AVX512 void layer_norm_avx512(const float* x, const float* gamma, const float* beta, float* out,
                                     int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    __m512 s = _mm512_setzero_ps();
    for (int64_t i = 0; i < dim; i += lanes) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(tail_mask(dim - i), xr + i));
    const float mean = _mm512_reduce_add_ps(s) / static_cast<float>(dim);
    const __m512 mv = _mm512_set1_ps(mean);
    __m512 q = _mm512_setzero_ps();
    for (int64_t i = 0; i < dim; i += lanes) {
      const __mmask16 mk = tail_mask(dim - i);
      const __m512 d = _mm512_maskz_sub_ps(mk, _mm512_maskz_loadu_ps(mk, xr + i), mv);
      q = _mm512_fmadd_ps(d, d, q);
    }
    const float var = _mm512_reduce_add_ps(q) / static_cast<float>(dim);
    const __m512 rstd = _mm512_set1_ps(1.0f / std::sqrt(var + eps));
    for (int64_t i = 0; i < dim; i += lanes) {
      const __mmask16 mk = tail_mask(dim - i);
      const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, xr + i), mv), rstd);
      const __m512 y = _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(mk, gamma + i), _mm512_maskz_loadu_ps(mk, beta + i));
      _mm512_mask_storeu_ps(o + i, mk, y);
    }
  }
}

SLUICE_AVX512 void softmax_avx512(float* x, int64_t n) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m = neg_inf;
  for (int64_t i = 0; i < n; i += lanes) m = _mm512_max_ps(m, _mm512_mask_loadu_ps(neg_inf, tail_mask(n - i), x + i));
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(m));
  __m512 s = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += lanes) {
    const __mmask16 mk = tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(mk, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + i), mx)));
    s = _mm512_add_ps(s, e);
    _mm512_mask_storeu_ps(x + i, mk, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(s));
  for (int64_t i = 0; i < n; i += lanes) {
    const __mmask16 mk = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + i), inv));
  }
}

SLUICE_AVX512 void exp_avx512(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += lanes) {
    const __mmask16 mk = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, mk, exp512(_mm512_maskz_loadu_ps(mk, x + i)));
  }
}

SLUICE_AVX512 void rope_avx512(float* x, const float* cos2, const float* sin2, int64_t head_dim, int64_t heads) {
  constexpr int swap_pairs = 0xB1;  // lanes (1, 0, 3, 2) in every 128-bit group
  for (int64_t i = 0; i < head_dim; i += lanes) {
    const __mmask16 mk = tail_mask(head_dim - i);
    const __m512 c = _mm512_maskz_loadu_ps(mk, cos2 + i), s = _mm512_maskz_loadu_ps(mk, sin2 + i);
    for (int64_t h = 0; h < heads; ++h) {
      float* p = x + h * head_dim + i;
      const __m512 v = _mm512_maskz_loadu_ps(mk, p);
      _mm512_mask_storeu_ps(p, mk, _mm512_fmadd_ps(_mm512_permute_ps(v, swap_pairs), s, _mm512_mul_ps(v, c)));
    }
  }
}

}  // namespace

const cpu_ops& avx512_ops() {
  static const cpu_ops ops{simd_level::avx512, matmul_avx512,  silu_mul_avx512, layer_norm_avx512,
                           softmax_avx512,     sigmoid_avx512, exp_avx512,      rope_avx512};
  return ops;
}

}  // namespace sluice::kernels::cpu
