// Every vector path of kernels/cpu/ops.hpp against the scalar reference, on every level this
// CPU runs, at the shapes the model uses and at awkward tails.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/ops.hpp"
#include "tests/common/random_vec.hpp"

using namespace sluice::kernels::cpu;

namespace {

using sluice::test::random_vec;

double max_rel_err(const std::vector<float>& ref, const std::vector<float>& got) {
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::abs(double(ref[i]) - got[i]) / std::max(1.0, std::abs(double(ref[i]))));
  return worst;
}

std::vector<const cpu_ops*> vector_levels() {
  std::vector<const cpu_ops*> out;
  if (simd_supported(simd_level::avx2)) out.push_back(&avx2_ops());
  if (simd_supported(simd_level::avx512)) out.push_back(&avx512_ops());
  if (out.empty()) MESSAGE("this CPU has neither AVX2 nor AVX-512: only the scalar path is tested");
  return out;
}

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("cpu_ops_for hands out a table this CPU runs, and names parse back") {
    CHECK(cpu_ops_for(best_simd_level()).level == best_simd_level());
    CHECK(cpu_ops_for(simd_level::scalar).level == simd_level::scalar);
    for (auto l : {simd_level::scalar, simd_level::avx2, simd_level::avx512}) CHECK(*parse_simd_level(to_string(l)) == l);
    CHECK_FALSE(parse_simd_level("sse9").has_value());
  }

  TEST_CASE("scalar matmul matches the double-precision gemm reference") {
    const int64_t m = 13, n = 29, k = 37;
    auto a = random_vec(m * k, 1), b = random_vec(k * n, 2);
    std::vector<float> ref(m * n), got(m * n);
    gemm_reference({m, n, k, a.data(), b.data(), ref.data()});
    scalar_ops().matmul({m, n, k, a.data(), k, b.data(), n, got.data(), n});
    CHECK(max_rel_err(ref, got) < 1e-5);
  }

  TEST_CASE("vector matmul matches scalar: tails, strides, bias, accumulate") {
    struct shape {
      int64_t m, n, k;
    };
    const shape shapes[] = {{1, 1, 1},    {3, 5, 7},     {4, 16, 16},   {5, 17, 3},    {7, 96, 144}, {9, 144, 48},
                            {64, 432, 144}, {130, 100, 33}, {2, 200, 9},   {37, 29, 144}, {6, 64, 0},   {150, 96, 144}};
    for (const auto* ops : vector_levels()) {
      for (const auto& s : shapes) {
        for (int variant = 0; variant < 3; ++variant) {
          CAPTURE(to_string(ops->level));
          CAPTURE(s.m);
          CAPTURE(s.n);
          CAPTURE(s.k);
          CAPTURE(variant);
          // Padded leading dimensions catch reads and writes past the logical matrix.
          const int64_t lda = s.k + 3, ldb = s.n + 5, ldc = s.n + 2;
          auto a = random_vec(s.m * lda, 3), b = random_vec(std::max<int64_t>(s.k, 1) * ldb, 4);
          auto bias = random_vec(s.n, 5), c0 = random_vec(s.m * ldc, 6);
          auto ref = c0, got = c0;
          matmul_args g{s.m, s.n, s.k, a.data(), lda, b.data(), ldb, ref.data(), ldc};
          g.bias = variant >= 1 ? bias.data() : nullptr;
          g.accumulate = variant == 2;
          scalar_ops().matmul(g);
          g.c = got.data();
          ops->matmul(g);
          CHECK(max_rel_err(ref, got) < 1e-5);
          // Padding columns of C stay untouched.
          bool pad_ok = true;
          for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = s.n; j < ldc; ++j) pad_ok &= got[i * ldc + j] == c0[i * ldc + j];
          CHECK(pad_ok);
        }
      }
    }
  }

  TEST_CASE("vector silu_mul and sigmoid match scalar over a wide range") {
    for (const auto* ops : vector_levels()) {
      CAPTURE(to_string(ops->level));
      for (int64_t n : {1, 7, 8, 15, 16, 17, 48, 100, 1000}) {
        auto g = random_vec(n, 7, 6.0f), u = random_vec(n, 8);
        if (n > 3) g[0] = 120.0f, g[1] = -120.0f, g[2] = 0.0f;
        std::vector<float> ref(n), got(n);
        scalar_ops().silu_mul(g.data(), u.data(), ref.data(), n);
        ops->silu_mul(g.data(), u.data(), got.data(), n);
        CHECK(max_rel_err(ref, got) < 1e-6);
        auto s_ref = g, s_got = g;
        scalar_ops().sigmoid(s_ref.data(), n);
        ops->sigmoid(s_got.data(), n);
        CHECK(max_rel_err(s_ref, s_got) < 1e-6);
      }
    }
  }

  TEST_CASE("vector exp matches std::exp, clamped at the ends") {
    for (const auto* ops : vector_levels()) {
      CAPTURE(to_string(ops->level));
      for (int64_t n : {1, 9, 16, 33, 500}) {
        auto x = random_vec(n, 15, 20.0f);
        std::vector<float> ref(n), got(n);
        scalar_ops().exp(x.data(), ref.data(), n);
        ops->exp(x.data(), got.data(), n);
        double worst = 0;
        for (int64_t i = 0; i < n; ++i)
          if (x[i] > -87.0f && x[i] < 88.0f) worst = std::max(worst, std::abs(double(got[i]) / ref[i] - 1.0));
        CHECK(worst < 1e-6);
      }
      const float edge[] = {-200.0f, 0.0f, 200.0f};
      float out[3];
      ops->exp(edge, out, 3);
      CHECK(out[0] >= 0.0f);
      CHECK(out[0] < 1e-37f);
      CHECK(out[1] == 1.0f);
      CHECK(std::isfinite(out[2]));
    }
  }

  TEST_CASE("vector layer_norm matches scalar") {
    for (const auto* ops : vector_levels()) {
      CAPTURE(to_string(ops->level));
      for (int64_t dim : {1, 7, 16, 32, 36, 144, 150}) {
        const int64_t rows = 5;
        auto x = random_vec(rows * dim, 9, 3.0f), gamma = random_vec(dim, 10), beta = random_vec(dim, 11);
        for (auto& v : x) v += 4.0f;  // a mean far from 0, as hidden states have
        std::vector<float> ref(x.size()), got(x.size());
        scalar_ops().layer_norm(x.data(), gamma.data(), beta.data(), ref.data(), rows, dim, 1e-5f);
        ops->layer_norm(x.data(), gamma.data(), beta.data(), got.data(), rows, dim, 1e-5f);
        CHECK(max_rel_err(ref, got) < 1e-5);
        auto in_place = x;
        ops->layer_norm(in_place.data(), gamma.data(), beta.data(), in_place.data(), rows, dim, 1e-5f);
        CHECK(max_rel_err(ref, in_place) < 1e-5);
      }
    }
  }

  TEST_CASE("vector softmax matches scalar and sums to one") {
    for (const auto* ops : vector_levels()) {
      CAPTURE(to_string(ops->level));
      for (int64_t n : {1, 3, 8, 16, 20, 64, 80, 333}) {
        auto x = random_vec(n, 12, 4.0f);
        for (auto& v : x) v -= 50.0f;  // all negative: the max must ignore tail lanes
        auto ref = x, got = x;
        scalar_ops().softmax(ref.data(), n);
        ops->softmax(got.data(), n);
        CHECK(max_rel_err(ref, got) < 1e-6);
        double sum = 0;
        for (float v : got) sum += v;
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
      }
    }
  }

  TEST_CASE("vector rope matches scalar, and scalar rope rotates pairs") {
    std::vector<float> x{1.0f, 0.0f, 0.0f, 2.0f};
    const float a = 0.5f;
    std::vector<float> cos2{std::cos(a), std::cos(a)}, sin2{-std::sin(a), std::sin(a)};
    scalar_ops().rope(x.data(), cos2.data(), sin2.data(), 2, 2);
    CHECK(x[0] == doctest::Approx(std::cos(a)));
    CHECK(x[1] == doctest::Approx(std::sin(a)));
    // The second head, (0, 2), turns by the same angle.
    CHECK(x[2] == doctest::Approx(-2.0f * std::sin(a)));
    CHECK(x[3] == doctest::Approx(2.0f * std::cos(a)));
    for (const auto* ops : vector_levels()) {
      CAPTURE(to_string(ops->level));
      for (int64_t n : {2, 6, 16, 18, 36, 144}) {
        const int64_t heads = 3;
        auto v = random_vec(n * heads, 13), ang = random_vec(n / 2, 14, 3.0f);
        std::vector<float> c2(n), s2(n);
        for (int64_t i = 0; i < n / 2; ++i) {
          c2[2 * i] = c2[2 * i + 1] = std::cos(ang[i]);
          s2[2 * i] = -std::sin(ang[i]);
          s2[2 * i + 1] = std::sin(ang[i]);
        }
        auto ref = v, got = v;
        scalar_ops().rope(ref.data(), c2.data(), s2.data(), n, heads);
        ops->rope(got.data(), c2.data(), s2.data(), n, heads);
        CHECK(max_rel_err(ref, got) < 1e-6);
      }
    }
  }
}
