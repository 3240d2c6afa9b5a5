// FP8 E4M3 codec: every code round-trips, rounding is to the nearest code (checked against a
// brute-force search of the table), and grouped quantization keeps the stated error bound.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/fp8.hpp"

using namespace sluice::kernels::cpu;

TEST_SUITE("fp8") {
  TEST_CASE("every finite code decodes and encodes back to itself") {
    int finite = 0;
    for (int b = 0; b < 256; ++b) {
      const float v = e4m3_to_float(static_cast<uint8_t>(b));
      if (std::isnan(v)) {
        CHECK((b & 0x7F) == 0x7F);
        continue;
      }
      ++finite;
      if (b == 0x80) CHECK(float_to_e4m3(v) == 0x80);  // -0 keeps its sign
      else CHECK(float_to_e4m3(v) == b);
    }
    CHECK(finite == 254);
    CHECK(e4m3_to_float(0x7E) == 448.0f);
    CHECK(e4m3_to_float(0x01) == std::ldexp(1.0f, -9));
    CHECK(e4m3_to_float(0x08) == std::ldexp(1.0f, -6));
  }

  TEST_CASE("encoding picks the nearest representable value") {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> mag(-12.0f, 9.0f);
    for (int i = 0; i < 20000; ++i) {
      const float x = std::ldexp(1.0f, 0) * std::exp2(mag(rng)) * (i % 2 ? -1.0f : 1.0f);
      if (std::fabs(x) > 448.0f) continue;
      float best = std::numeric_limits<float>::infinity();
      for (int b = 0; b < 256; ++b) {
        const float v = e4m3_to_float(static_cast<uint8_t>(b));
        if (!std::isnan(v)) best = std::fmin(best, std::fabs(v - x));
      }
      const float got = std::fabs(e4m3_to_float(float_to_e4m3(x)) - x);
      REQUIRE(got == best);
    }
    CHECK(e4m3_to_float(float_to_e4m3(1e6f)) == 448.0f);
    CHECK(e4m3_to_float(float_to_e4m3(-1e6f)) == -448.0f);
  }

  TEST_CASE("grouped quantization: one scale per 128 values, error within the bound") {
    std::mt19937 rng(3);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const std::size_t n = 1000;  // not a multiple of 128: the last group is short
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = g(rng) * (i < 128 ? 100.0f : 0.01f);
    x[300] = 0;
    std::vector<uint8_t> q(n);
    std::vector<float> scales(fp8_scale_count(n));
    CHECK(scales.size() == 8);
    quantize_e4m3(x, q, scales);
    dequantize_e4m3(q, scales, y);
    for (std::size_t i = 0; i < n; ++i) {
      const float s = scales[i / fp8_group];
      const float bound = std::fmax(std::fabs(x[i]) * 0.0625f, s * std::ldexp(1.0f, -10)) * 1.0001f;
      REQUIRE_MESSAGE(std::fabs(y[i] - x[i]) <= bound, "value " << i);
    }
    CHECK(y[300] == 0.0f);
    // Each group's largest magnitude maps to 448 exactly, so groups of very different sizes
    // keep their own precision.
    CHECK(scales[0] > 1000.0f * scales[2]);
    std::vector<float> zeros(200, 0.0f), back(200, 1.0f);
    std::vector<uint8_t> qz(200);
    std::vector<float> sz(2);
    quantize_e4m3(zeros, qz, sz);
    dequantize_e4m3(qz, sz, back);
    CHECK(sz[0] == 1.0f);
    for (float v : back) CHECK(v == 0.0f);
  }
}
