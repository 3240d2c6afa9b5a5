// kernels/cpu/bf16_gemm: the bf16 rounding, the packed layout, the scalar twin against exact
// arithmetic, the AVX-512 BF16 kernel against the twin over a table of shapes, and the whole
// bf16 product against the f32 one within the bound that rounding the inputs to 8 significant
// bits allows. Tolerances are derived from the arithmetic (stated at each check), not measured.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/bf16_gemm.hpp"
#include "tests/common/random_vec.hpp"

using namespace sluice::kernels::cpu;

namespace {

using sluice::test::random_vec;

constexpr double u32 = 1.0 / (1 << 24);  // f32 unit roundoff, 2^-24
constexpr double u16 = 1.0 / (1 << 9);   // bf16 unit roundoff, 2^-9 (8 significant bits)

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

struct product {
  int64_t m, n, k, lda, ldc;
  bool bias, accumulate;
};

struct operands {
  std::vector<float> a, b, bias, c0;
};

operands make(const product& p, uint32_t seed) {
  operands o;
  o.a = random_vec(static_cast<std::size_t>(p.m * p.lda), seed);
  o.b = random_vec(static_cast<std::size_t>(p.k * p.n), seed + 1, 0.2f);
  if (p.bias) o.bias = random_vec(static_cast<std::size_t>(p.n), seed + 2);
  o.c0 = random_vec(static_cast<std::size_t>(p.m * p.ldc), seed + 3);
  return o;
}

matmul_args args_of(const product& p, const operands& o, std::vector<float>& c) {
  matmul_args g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.a = o.a.data();
  g.lda = p.lda;
  g.b = o.b.data();
  g.ldb = p.n;
  g.c = c.data();
  g.ldc = p.ldc;
  g.bias = p.bias ? o.bias.data() : nullptr;
  g.accumulate = p.accumulate;
  return g;
}

// Sum of the magnitudes of every term that goes into C[i][j] (bias, old C, each product), with
// the inputs as given (scale of both error bounds below).
double magnitude(const product& p, const operands& o, int64_t i, int64_t j) {
  double s = (p.bias ? std::abs(o.bias[j]) : 0.0) + (p.accumulate ? std::abs(o.c0[i * p.ldc + j]) : 0.0);
  for (int64_t q = 0; q < p.k; ++q) s += std::abs(double(o.a[i * p.lda + q]) * o.b[q * p.n + j]);
  return s;
}

}  // namespace

TEST_CASE("to_bf16 rounds to nearest even and keeps infinities and NaN") {
  CHECK(to_bf16(1.0f) == 0x3F80);
  CHECK(to_bf16(-2.0f) == 0xC000);
  CHECK(to_bf16(0.0f) == 0x0000);
  // 1 + 2^-8 lies half way between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): to the even one.
  CHECK(to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  // 1 + 3 * 2^-8 lies half way between 0x3F81 (odd) and 0x3F82 (even): up.
  CHECK(to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  // Just above half way rounds up.
  CHECK(to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3F81);
  CHECK(to_bf16(INFINITY) == 0x7F80);
  CHECK(to_bf16(-INFINITY) == 0xFF80);
  CHECK(std::isnan(from_bf16(to_bf16(NAN))));
  // The largest finite f32 is past the largest finite bf16's rounding range: infinity.
  CHECK(to_bf16(3.4028235e38f) == 0x7F80);
  // Every bf16 value converts to f32 and back unchanged (NaNs: still NaN).
  int changed = 0;
  for (uint32_t v = 0; v < 0x10000; ++v) {
    const float f = from_bf16(static_cast<uint16_t>(v));
    CHECK(bits(f) == v << 16);
    if (std::isnan(f) ? !std::isnan(from_bf16(to_bf16(f))) : to_bf16(f) != v) ++changed;
  }
  CHECK(changed == 0);
}

TEST_CASE("pack_bf16 puts rows 2p and 2p+1 of each column in one word and pads an odd k with zero") {
  // B [3, 2] with row stride 3 (a column of padding that must not be read).
  const std::vector<float> b{1.0f, 2.0f, 99.0f, 3.0f, 4.0f, 99.0f, 5.0f, 6.0f, 99.0f};
  const auto m = pack_bf16(b.data(), 3, 2, 3);
  REQUIRE(m.k == 3);
  REQUIRE(m.n == 2);
  REQUIRE(m.pairs.size() == 4);
  CHECK(m.pairs[0] == (0x3F80u | 0x4040u << 16));  // column 0: 1 (row 0), 3 (row 1)
  CHECK(m.pairs[1] == (0x4000u | 0x4080u << 16));  // column 1: 2, 4
  CHECK(m.pairs[2] == 0x40A0u);                    // column 0: 5, then zero
  CHECK(m.pairs[3] == 0x40C0u);                    // column 1: 6, then zero
  CHECK(m.bytes() == 16);
}

TEST_CASE("matmul_bf16_reference: values exact in bf16 give the exact product, bias and accumulate included") {
  // Small integers are exact in bf16, their products and sums exact in f32.
  const std::vector<float> a{1, 2, 3, -1, 0, 4};            // [2, 3]
  const std::vector<float> b{1, 0, 2, -1, 3, 5};            // [3, 2]
  const std::vector<float> bias{10, -10};
  std::vector<float> c{100, 200, 300, 400};
  const auto packed = pack_bf16(b.data(), 3, 2, 2);
  matmul_args g;
  g.m = 2, g.n = 2, g.k = 3, g.a = a.data(), g.lda = 3, g.c = c.data(), g.ldc = 2, g.bias = bias.data();
  g.accumulate = true;
  matmul_bf16_reference(g, packed);
  // Row 0: [1*1 + 2*2 + 3*3, 1*0 + 2*(-1) + 3*5] = [14, 13]; row 1: [-1 + 0 + 12, 0 + 0 + 20] = [11, 20].
  CHECK(c == std::vector<float>{100 + 14 + 10, 200 + 13 - 10, 300 + 11 + 10, 400 + 20 - 10});
  // Without accumulate and bias: the product alone; matmul_bf16 (either path) agrees exactly.
  std::vector<float> c2(4, -7.0f), c3(4, -7.0f);
  g.accumulate = false;
  g.bias = nullptr;
  g.c = c2.data();
  matmul_bf16_reference(g, packed);
  CHECK(c2 == std::vector<float>{14, 13, 11, 20});
  g.c = c3.data();
  matmul_bf16(g, packed);
  CHECK(c3 == c2);
}

TEST_CASE("matmul_bf16's AVX-512 BF16 kernel equals its scalar twin within f32 summation error, every tile shape") {
  if (!bf16_supported()) {
    MESSAGE("SKIPPED: no AVX-512 BF16 on this CPU (the kernel is not used here; the scalar twin is)");
    return;
  }
  // Row counts through every tile height and past the 120-row block; widths through the
  // 16-column vectors, the 48-wide blocks, the 4-vector remainders and ragged tails; depths odd
  // and even, including the model's 144, 192 and 288; strides wider than the rows.
  const std::vector<int64_t> ms{1, 2, 5, 6, 7, 8, 9, 12, 13, 121, 250};
  const std::vector<int64_t> ns{1, 15, 16, 17, 33, 48, 49, 64, 65, 96, 144, 192, 432};
  const std::vector<int64_t> ks{1, 2, 3, 9, 31, 144, 192, 288};
  uint32_t seed = 1;
  int checked = 0;
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        if (m * n * k > 4'000'000) continue;
        const bool bias = (seed % 2) == 0, accumulate = (seed % 3) == 0;
        const product p{m, n, k, k + (seed % 4), n + (seed % 5), bias, accumulate};
        const auto o = make(p, seed++);
        const auto packed = pack_bf16(o.b.data(), k, n, n);
        std::vector<float> want = o.c0, got = o.c0;
        matmul_bf16_reference(args_of(p, o, want), packed);
        matmul_bf16(args_of(p, o, got), packed);
        // The twin sums exact products in double and rounds once (<= u32 |s|); the kernel adds
        // k products, the bias and old C in f32 (each addition <= u32 of a partial sum <= the
        // sum of magnitudes). Bound: (k + 3) u32 times the magnitude of the bf16 terms, which
        // differ from the inputs' by at most a factor (1 + u16)^2 < 1.01.
        int bad = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < p.ldc; ++j) {
            const auto at = i * p.ldc + j;
            if (j >= n) {
              if (got[at] != o.c0[at]) ++bad;  // columns past n untouched
              continue;
            }
            const double tol = double(k + 3) * u32 * 1.01 * magnitude(p, o, i, j);
            if (!(std::abs(double(got[at]) - want[at]) <= tol)) ++bad;
          }
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CHECK(bad == 0);
        ++checked;
      }
  CHECK(checked > 900);
}

TEST_CASE("matmul_bf16 is the f32 product within the bf16 rounding bound of its inputs") {
  // Each input is rounded to 8 significant bits (relative error <= u16 = 2^-9), so each product
  // moves by <= (2 u16 + u16^2) of its magnitude; the f32 sums add (k + 3) u32 on top. The
  // exact product is computed here in double from the f32 inputs: an independent reference.
  for (const product& p : {product{8, 144, 144, 144, 144, true, false}, product{250, 432, 144, 150, 432, true, true},
                           product{3, 48, 192, 192, 48, false, false}, product{13, 29, 144, 144, 29, true, false},
                           product{40, 32, 288, 288, 32, true, false}}) {
    const auto o = make(p, static_cast<uint32_t>(p.m * 7 + p.n));
    const auto packed = pack_bf16(o.b.data(), p.k, p.n, p.n);
    std::vector<float> got = o.c0;
    matmul_bf16(args_of(p, o, got), packed);
    int bad = 0;
    double worst_share = 0;  // largest |error| / bound seen, reported
    double worst_f32 = 0;    // largest |error| / what f32 summation alone could explain
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double exact = (p.bias ? o.bias[j] : 0.0) + (p.accumulate ? o.c0[i * p.ldc + j] : 0.0);
        for (int64_t q = 0; q < p.k; ++q) exact += double(o.a[i * p.lda + q]) * o.b[q * p.n + j];
        const double mag = magnitude(p, o, i, j);
        const double bound = (2 * u16 + u16 * u16) * mag + double(p.k + 4) * u32 * 1.01 * mag;
        const double err = std::abs(double(got[i * p.ldc + j]) - exact);
        worst_share = std::max(worst_share, err / bound);
        worst_f32 = std::max(worst_f32, err / (double(p.k + 4) * u32 * 1.01 * mag));
        if (!(err <= bound)) ++bad;
      }
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    MESSAGE("largest error / bound: " << worst_share);
    CHECK(bad == 0);
    // And bf16 is not silently f32: somewhere the result differs from the exact f32 product by
    // more than f32 summation alone could (k random inputs all exact in bf16 is impossible).
    CHECK(worst_f32 > 1.0);
  }
}
