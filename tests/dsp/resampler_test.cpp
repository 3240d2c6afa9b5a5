#include "dsp/resampler.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace {

using sluice::dsp::resample_quality;
using sluice::dsp::resampler;

constexpr int target_rate = 16000;
constexpr int common_rates[] = {8000, 11025, 16000, 22050, 32000, 44100, 48000};
constexpr double tone_hz = 1000.0;
constexpr float tone_amplitude = 0.5f;

std::vector<float> sine(int rate, double hz, double seconds, float amplitude = tone_amplitude) {
  std::vector<float> x(static_cast<std::size_t>(std::lround(seconds * rate)));
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = amplitude * static_cast<float>(std::sin(2.0 * std::numbers::pi * hz * i / rate));
  }
  return x;
}

/// Power of `x` at `hz` (Goertzel), normalised so a unit sine gives 0.25.
double goertzel_power(const std::vector<float>& x, std::size_t from, std::size_t to, int rate, double hz) {
  const double w = 2.0 * std::numbers::pi * hz / rate;
  const double coeff = 2.0 * std::cos(w);
  double s1 = 0.0, s2 = 0.0;
  for (std::size_t i = from; i < to; ++i) {
    const double s0 = x[i] + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const double n = static_cast<double>(to - from);
  return (s1 * s1 + s2 * s2 - coeff * s1 * s2) / (n * n);
}

/// Frequency with the most power in [lo, hi], searched in `step` Hz.
double peak_hz(const std::vector<float>& x, std::size_t from, std::size_t to, int rate, double lo,
               double hi, double step) {
  double best = lo, best_power = -1.0;
  for (double f = lo; f <= hi; f += step) {
    const double p = goertzel_power(x, from, to, rate, f);
    if (p > best_power) best_power = p, best = f;
  }
  return best;
}

double rms(const std::vector<float>& x, std::size_t from, std::size_t to) {
  double acc = 0.0;
  for (std::size_t i = from; i < to; ++i) acc += static_cast<double>(x[i]) * x[i];
  return std::sqrt(acc / static_cast<double>(to - from));
}

std::vector<float> resample_all(int rate, const std::vector<float>& x, std::size_t chunk,
                                resample_quality q = resample_quality::high) {
  auto r = resampler::create(rate, target_rate, q);
  REQUIRE(r);
  std::vector<float> out;
  for (std::size_t at = 0; at < x.size(); at += chunk) {
    const std::size_t n = std::min(chunk, x.size() - at);
    auto part = r->process(std::span<const float>(x).subspan(at, n));
    REQUIRE(part);
    out.insert(out.end(), part->begin(), part->end());
  }
  auto tail = r->flush();
  REQUIRE(tail);
  out.insert(out.end(), tail->begin(), tail->end());
  CHECK(r->num_samples_in() == x.size());
  CHECK(r->num_samples_out() == out.size());
  return out;
}

}  // namespace

TEST_SUITE("resampler") {
  TEST_CASE("every common rate to 16 kHz: length, pitch and level") {
    for (int rate : common_rates) {
      CAPTURE(rate);
      const std::vector<float> in = sine(rate, tone_hz, 1.0);
      const std::vector<float> out = resample_all(rate, in, in.size());
      const double expected = static_cast<double>(in.size()) * target_rate / rate;
      CHECK(std::abs(static_cast<double>(out.size()) - std::round(expected)) <= 1.0);
      // Away from the edges, where the filter starts and stops.
      const std::size_t from = out.size() / 10, to = out.size() - out.size() / 10;
      CHECK(peak_hz(out, from, to, target_rate, 900.0, 1100.0, 0.5) == doctest::Approx(tone_hz).epsilon(0.002));
      CHECK(rms(out, from, to) == doctest::Approx(tone_amplitude / std::numbers::sqrt2).epsilon(0.01));
    }
  }

  TEST_CASE("every quality recipe resamples") {
    for (const char* name : {"quick", "low", "medium", "high", "very_high"}) {
      CAPTURE(name);
      auto q = sluice::dsp::parse_resample_quality(name);
      REQUIRE(q);
      const std::vector<float> in = sine(44100, tone_hz, 0.5);
      const std::vector<float> out = resample_all(44100, in, 1000, *q);
      CHECK(std::abs(static_cast<double>(out.size()) - 8000.0) <= 1.0);
      CHECK(peak_hz(out, 800, 7200, target_rate, 900.0, 1100.0, 0.5) == doctest::Approx(tone_hz).epsilon(0.002));
    }
  }

  TEST_CASE("tones above the new Nyquist are filtered out, not aliased") {
    const std::vector<float> in = sine(48000, 12000.0, 0.5);
    const std::vector<float> out = resample_all(48000, in, in.size());
    const std::size_t from = out.size() / 10, to = out.size() - out.size() / 10;
    // 12 kHz would alias to 4 kHz; high quality leaves it more than 60 dB down.
    CHECK(rms(out, from, to) < 1e-3 * tone_amplitude);
  }

  TEST_CASE("output does not depend on how the input is chunked") {
    std::mt19937 rng(5);
    std::normal_distribution<float> noise(0.0f, 0.1f);
    for (int rate : common_rates) {
      CAPTURE(rate);
      std::vector<float> in = sine(rate, 440.0, 0.7);
      for (float& v : in) v += noise(rng);
      const std::vector<float> whole = resample_all(rate, in, in.size());
      for (std::size_t chunk : {1u, 7u, 160u, 441u, 4096u}) {
        CAPTURE(chunk);
        CHECK(resample_all(rate, in, chunk) == whole);
      }
      // Random chunk sizes, including empty ones.
      auto r = resampler::create(rate, target_rate);
      REQUIRE(r);
      std::uniform_int_distribution<std::size_t> size(0, 3000);
      std::vector<float> out;
      for (std::size_t at = 0; at < in.size();) {
        const std::size_t n = std::min(size(rng), in.size() - at);
        auto part = r->process(std::span<const float>(in).subspan(at, n));
        REQUIRE(part);
        out.insert(out.end(), part->begin(), part->end());
        at += n;
      }
      auto tail = r->flush();
      REQUIRE(tail);
      out.insert(out.end(), tail->begin(), tail->end());
      CHECK(out == whole);
    }
  }

  TEST_CASE("equal rates pass samples through unchanged") {
    const std::vector<float> in = sine(16000, 300.0, 0.1);
    auto r = resampler::create(16000, 16000);
    REQUIRE(r);
    auto out = r->process(in);
    REQUIRE(out);
    CHECK(*out == in);
    auto tail = r->flush();
    REQUIRE(tail);
    CHECK(tail->empty());
  }

  TEST_CASE("process after flush is an error until reset") {
    auto r = resampler::create(8000, 16000);
    REQUIRE(r);
    const std::vector<float> in = sine(8000, 500.0, 0.2);
    REQUIRE(r->process(in));
    REQUIRE(r->flush());
    auto again = r->process(in);
    REQUIRE_FALSE(again);
    CHECK(again.error().code == sluice::errc::invalid_argument);
    r->reset();
    CHECK(r->num_samples_in() == 0);
    // After reset the stream is fresh: same result as a new resampler.
    std::vector<float> out = *r->process(in);
    const std::vector<float> tail = *r->flush();
    out.insert(out.end(), tail.begin(), tail.end());
    CHECK(out == resample_all(8000, in, in.size()));
  }

  TEST_CASE("rates outside 4 kHz .. 192 kHz and unknown qualities are errors") {
    for (auto [in, out] : {std::pair{0, 16000}, {-8000, 16000}, {3999, 16000}, {192001, 16000},
                           {16000, 0}, {16000, 400000}}) {
      CAPTURE(in);
      CAPTURE(out);
      auto r = resampler::create(in, out);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == sluice::errc::invalid_argument);
    }
    CHECK(resampler::create(4000, 192000));
    CHECK(resampler::create(96000));
    auto q = sluice::dsp::parse_resample_quality("best");
    REQUIRE_FALSE(q);
    CHECK(q.error().code == sluice::errc::invalid_config);
  }

  TEST_CASE("a whole stream at once equals the stream fed one sample at a time") {
    // resample_all and process() of a long span hand soxr the input in blocks of their own;
    // one sample per call never exceeds a block, so it is the reference for any blocking.
    std::mt19937 rng(11);
    std::normal_distribution<float> noise(0.0f, 0.1f);
    for (int rate : {8000, 44100}) {
      CAPTURE(rate);
      std::vector<float> in = sine(rate, 440.0, 2.1);
      for (float& v : in) v += noise(rng);
      const std::vector<float> reference = resample_all(rate, in, 1);
      auto r = resampler::create(rate, target_rate);
      REQUIRE(r);
      std::vector<float> out(3, 1.0f);  // replaced, not appended to
      REQUIRE(r->resample_all(in, out));
      CHECK(out == reference);
      CHECK(r->num_samples_in() == in.size());
      CHECK(r->num_samples_out() == out.size());
      CHECK(resample_all(rate, in, in.size()) == reference);
      // Used: refused until reset.
      CHECK_FALSE(r->resample_all(in, out));
      r->reset();
      REQUIRE(r->resample_all(in, out));
      CHECK(out == reference);
      sluice::dsp::audio mono;
      mono.sample_rate = rate;
      mono.channels = {in};
      auto whole = sluice::dsp::resample(mono);
      REQUIRE(whole);
      CHECK(whole->channels[0] == reference);
    }
  }

  TEST_CASE("whole-file resample handles every channel") {
    sluice::dsp::audio stereo;
    stereo.sample_rate = 44100;
    stereo.channels = {sine(44100, 1000.0, 0.5), sine(44100, 2000.0, 0.5)};
    auto out = sluice::dsp::resample(stereo);
    REQUIRE(out);
    CHECK(out->sample_rate == 16000);
    REQUIRE(out->num_channels() == 2);
    CHECK(out->channels[0].size() == out->channels[1].size());
    CHECK(std::abs(static_cast<double>(out->num_samples()) - 8000.0) <= 1.0);
    CHECK(peak_hz(out->channels[1], 800, 7200, target_rate, 1900.0, 2100.0, 0.5) ==
          doctest::Approx(2000.0).epsilon(0.002));

    sluice::dsp::audio bad;
    bad.sample_rate = 1000;
    bad.channels = {std::vector<float>(100, 0.0f)};
    CHECK_FALSE(sluice::dsp::resample(bad));
    bad.channels.clear();
    CHECK_FALSE(sluice::dsp::resample(bad));
  }
}
