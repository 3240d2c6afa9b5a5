// bf16 products with f32 accumulation (see bf16_gemm.hpp). The AVX-512 functions carry their
// target attributes (no file-wide flags), so this file links into binaries that start on CPUs
// without them; matmul_bf16 only calls them when bf16_supported() says so.
#include "kernels/cpu/bf16_gemm.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/cpu/avx512_tiles.hpp"

// GCC 12's avx512fintrin.h initialises "undefined" vectors from themselves, which trips
// -Wmaybe-uninitialized wherever they inline (GCC bug 105593, fixed in 12.3/13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define SLUICE_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16,avx2,fma")))

namespace sluice::kernels::cpu {

uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t x) {
  const uint32_t u = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bf16_matrix pack_bf16(const float* b, int64_t k, int64_t n, int64_t ldb) {
  bf16_matrix m;
  m.k = k;
  m.n = n;
  const int64_t kp = (k + 1) / 2;
  m.pairs.assign(static_cast<std::size_t>(kp * n), 0u);
  for (int64_t p = 0; p < kp; ++p)
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t lo = to_bf16(b[2 * p * ldb + j]);
      const uint32_t hi = 2 * p + 1 < k ? to_bf16(b[(2 * p + 1) * ldb + j]) : 0u;
      m.pairs[static_cast<std::size_t>(p * n + j)] = lo | (hi << 16);
    }
  return m;
}

bool bf16_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512bf16");
}

void matmul_bf16_reference(const matmul_args& g, const bf16_matrix& b) {
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = g.bias ? g.bias[j] : 0.0;
      if (g.accumulate) s += g.c[i * g.ldc + j];
      for (int64_t p = 0; p < g.k; ++p) {
        const uint32_t w = b.pairs[static_cast<std::size_t>((p / 2) * b.n + j)];
        const float bv = from_bf16(static_cast<uint16_t>(p % 2 ? w >> 16 : w & 0xffffu));
        s += static_cast<double>(from_bf16(to_bf16(g.a[i * g.lda + p]))) * bv;
      }
      g.c[i * g.ldc + j] = static_cast<float>(s);
    }
}

namespace {

using namespace avx512_tiles;

// A, rounded to bf16 pairs: row i of `out` is [kp] words (low half column 2p).
SLUICE_AVX512_BF16 void convert_rows(const matmul_args& g, int64_t kp, uint32_t* out) {
  for (int64_t i = 0; i < g.m; ++i) {
    const float* a = g.a + i * g.lda;
    uint32_t* o = out + i * kp;
    for (int64_t p = 0; p < kp; p += lanes) {
      // 16 pairs = 32 floats: two loads, the second and the tail masked to what row i holds.
      const int64_t left = g.k - 2 * p;
      const __m512 lo = _mm512_maskz_loadu_ps(tail_bits(left), a + 2 * p);
      const __m512 hi = _mm512_maskz_loadu_ps(tail_bits(left - lanes), a + 2 * p + lanes);
      const __m512i packed = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      _mm512_mask_storeu_epi32(o + p, tail_bits(kp - p), packed);
    }
  }
}

struct tile_args {
  const matmul_args* g;
  const uint32_t* a;  // converted A, row stride kp
  int64_t kp;
  const bf16_matrix* b;
};

template <bool Ragged>
SLUICE_AVX512_BF16 inline __m512 load_f(const float* p, bool last, __mmask16 mk) {
  if constexpr (Ragged) return last ? _mm512_maskz_loadu_ps(mk, p) : _mm512_loadu_ps(p);
  return _mm512_loadu_ps(p);
}

template <bool Ragged>
SLUICE_AVX512_BF16 inline __m512i load_w(const uint32_t* p, bool last, __mmask16 mk) {
  if constexpr (Ragged) return last ? _mm512_maskz_loadu_epi32(mk, p) : _mm512_loadu_si512(p);
  return _mm512_loadu_si512(p);
}

template <int R, int V, bool Ragged>
SLUICE_AVX512_BF16 void tile(const tile_args& t, int64_t i0, int64_t j0, __mmask16 mk) {
  const matmul_args& g = *t.g;
  __m512 acc[R][V];
  float* c = g.c + i0 * g.ldc + j0;
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    const __m512 init = g.bias ? load_f<Ragged>(g.bias + j0 + v * lanes, v == V - 1, mk) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      acc[r][v] = g.accumulate ? _mm512_add_ps(load_f<Ragged>(c + r * g.ldc + v * lanes, v == V - 1, mk), init) : init;
  }
  const uint32_t* a = t.a + i0 * t.kp;
  const uint32_t* b = t.b->pairs.data() + j0;
  const int64_t ldb = t.b->n;
  for (int64_t p = 0; p < t.kp; ++p) {
    __m512i bv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) bv[v] = load_w<Ragged>(b + p * ldb + v * lanes, v == V - 1, mk);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r * t.kp + p])));
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, reinterpret_cast<__m512bh>(bv[v]));
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      float* out = c + r * g.ldc + v * lanes;
      if (Ragged && v == V - 1)
        _mm512_mask_storeu_ps(out, mk, acc[r][v]);
      else
        _mm512_storeu_ps(out, acc[r][v]);
    }
}

using tile_fn = void (*)(const tile_args&, int64_t, int64_t, __mmask16);

template <int R, int V, bool Ragged>
struct tile_of {
  static constexpr tile_fn fn = &tile<R, V, Ragged>;
};

constexpr auto tiles = make_table<tile_fn, tile_of>();

SLUICE_AVX512_BF16 void matmul_bf16_avx512(const matmul_args& g, const bf16_matrix& b) {
  const int64_t kp = (g.k + 1) / 2;
  thread_local std::vector<uint32_t> scratch;
  const auto need = static_cast<std::size_t>(g.m * kp);
  if (scratch.size() < need) scratch.resize(need);
  convert_rows(g, kp, scratch.data());
  const tile_args t{&g, scratch.data(), kp, &b};
  for_each_tile(tiles, g.m, g.n, [&](tile_fn f, int64_t i0, int64_t j0, __mmask16 mk) { f(t, i0, j0, mk); });
}

}  // namespace

void matmul_bf16(const matmul_args& g, const bf16_matrix& b) {
  if (g.m <= 0 || g.n <= 0) return;
  static const bool fast = bf16_supported();
  if (fast)
    matmul_bf16_avx512(g, b);
  else
    matmul_bf16_reference(g, b);
}

}  // namespace sluice::kernels::cpu
