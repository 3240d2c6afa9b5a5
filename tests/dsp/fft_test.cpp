#include "dsp/fft.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <span>
#include <thread>
#include <vector>

namespace {

std::vector<std::complex<double>> naive_dft(const std::vector<double>& x) {
  const std::size_t n = x.size();
  std::vector<std::complex<double>> out(n / 2 + 1);
  for (std::size_t k = 0; k <= n / 2; ++k) {
    std::complex<double> acc = 0.0;
    for (std::size_t t = 0; t < n; ++t) {
      // Reduce k*t mod n first so the angle stays small and exact.
      const double angle = -2.0 * std::numbers::pi * static_cast<double>((k * t) % n) /
                           static_cast<double>(n);
      acc += x[t] * std::complex<double>(std::cos(angle), std::sin(angle));
    }
    out[k] = acc;
  }
  return out;
}

}  // namespace

TEST_SUITE("fft") {
  TEST_CASE("matches a naive DFT for every power of two up to 4096") {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (std::size_t n = 2; n <= 4096; n *= 2) {
      CAPTURE(n);
      std::vector<double> x(n);
      for (double& v : x) v = dist(rng);
      auto plan = sluice::dsp::real_fft::create(n);
      REQUIRE(plan);
      REQUIRE(plan->num_bins() == n / 2 + 1);
      std::vector<std::complex<double>> got(plan->num_bins());
      plan->forward(x, got);
      const auto want = naive_dft(x);
      double max_err = 0.0;
      for (std::size_t k = 0; k < want.size(); ++k) max_err = std::max(max_err, std::abs(got[k] - want[k]));
      // Random input of unit scale: the DFT magnitudes grow like sqrt(n).
      CHECK(max_err < 1e-12 * static_cast<double>(n));
    }
  }

  TEST_CASE("a cosine lands in its bin") {
    constexpr std::size_t n = 512;
    constexpr std::size_t bin = 37;
    std::vector<double> x(n);
    for (std::size_t t = 0; t < n; ++t) {
      x[t] = std::cos(2.0 * std::numbers::pi * bin * t / n);
    }
    auto plan = sluice::dsp::real_fft::create(n);
    REQUIRE(plan);
    std::vector<std::complex<double>> out(plan->num_bins());
    plan->forward(x, out);
    for (std::size_t k = 0; k < out.size(); ++k) {
      CHECK(std::abs(out[k]) == doctest::Approx(k == bin ? n / 2.0 : 0.0).epsilon(1e-9).scale(1.0));
    }
  }

  TEST_CASE("rejects sizes that are not powers of two") {
    for (std::size_t n : {0u, 1u, 3u, 400u, 1000u}) {
      CAPTURE(n);
      auto plan = sluice::dsp::real_fft::create(n);
      REQUIRE_FALSE(plan);
      CHECK(plan.error().code == sluice::errc::invalid_argument);
    }
    CHECK_FALSE(sluice::dsp::real_fft::create(sluice::dsp::real_fft::max_size * 2));
  }
  TEST_CASE("input and output off FFTW's SIMD alignment give the same bits as aligned arrays") {
    // The plan runs SIMD codelets on aligned arrays and copies misaligned ones through aligned
    // scratch; both must be the one plan, so where a caller's arrays lie never changes a bit.
    std::mt19937 rng(5);
    std::normal_distribution<double> g;
    for (std::size_t n : {256u, 512u, 1024u}) {
      CAPTURE(n);
      auto plan = sluice::dsp::real_fft::create(n);
      REQUIRE(plan);
      std::vector<double> x(n + 1);
      for (auto& v : x) v = g(rng);
      std::vector<double> aligned(x.begin() + 1, x.end());  // a fresh vector: malloc's 16 bytes
      std::vector<std::complex<double>> want(n / 2 + 1);
      const std::vector<double> aligned_before = aligned;
      plan->forward(aligned, want);
      CHECK(aligned == aligned_before);  // the SIMD path leaves its input as it was too
      // Input 8 bytes off; output 8 bytes off (complex values placed at an odd double).
      std::vector<double> out_storage(2 * (n / 2 + 1) + 1);
      auto* off_out = reinterpret_cast<std::complex<double>*>(out_storage.data() + 1);
      plan->forward(std::span<const double>(x.data() + 1, n), std::span<std::complex<double>>(off_out, n / 2 + 1));
      std::vector<std::complex<double>> got_in_off(n / 2 + 1);
      plan->forward(std::span<const double>(x.data() + 1, n), got_in_off);
      int same_off_out = 0, same_in_off = 0;
      for (std::size_t k = 0; k <= n / 2; ++k) {
        same_off_out += off_out[k] == want[k];
        same_in_off += got_in_off[k] == want[k];
      }
      CHECK(same_off_out == static_cast<int>(n / 2 + 1));
      CHECK(same_in_off == static_cast<int>(n / 2 + 1));
      const auto ref = naive_dft(aligned);
      double worst = 0;
      for (std::size_t k = 0; k <= n / 2; ++k) worst = std::max(worst, std::abs(want[k] - ref[k]));
      CHECK(worst < 1e-12 * static_cast<double>(n));
    }
  }

  TEST_CASE("one plan run from 4 threads at once, input 8 bytes off 16-byte alignment, gives each the naive DFT and leaves the input as it was") {
    const std::size_t n = 512;
    auto plan = sluice::dsp::real_fft::create(n);
    REQUIRE(plan.has_value());
    std::vector<std::vector<double>> inputs(4);
    std::mt19937 rng(11);
    std::normal_distribution<double> g;
    // One more sample in front, skipped: each input starts 8 bytes off the 16-byte alignment of
    // the planning arrays. The outputs start one complex (16 bytes) in, so they stay 16-byte
    // aligned: only the inputs are off FFTW's SIMD alignment.
    for (auto& x : inputs) {
      x.resize(n + 1);
      for (auto& v : x) v = g(rng);
    }
    const auto before = inputs;
    std::vector<std::vector<std::complex<double>>> outs(4, std::vector<std::complex<double>>(n / 2 + 2));
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int rep = 0; rep < 200; ++rep)
          plan->forward(std::span<const double>(inputs[t].data() + 1, n),
                        std::span<std::complex<double>>(outs[t].data() + 1, n / 2 + 1));
      });
    for (auto& th : threads) th.join();
    for (std::size_t t = 0; t < 4; ++t) {
      CAPTURE(t);
      CHECK(inputs[t] == before[t]);
      const auto want = naive_dft(std::vector<double>(inputs[t].begin() + 1, inputs[t].end()));
      double worst = 0;
      for (std::size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::abs(outs[t][k + 1] - want[k]));
      CHECK(worst < 1e-9);
    }
  }
}
