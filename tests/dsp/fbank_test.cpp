#include "dsp/fbank.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/common/audio_tools.hpp"

namespace {

using sluice::dsp::fbank_computer;
using sluice::dsp::streaming_fbank;

const std::string golden_dir = std::string(SLUICE_TEST_DATA_DIR) + "/fbank";
constexpr float pcm16_scale = 1.0f / 32768.0f;
/// Parity budget against torchaudio (log-mel units).
constexpr float golden_tolerance = 1e-3f;

uint32_t le32(const std::vector<uint8_t>& b, std::size_t at) {
  return b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (static_cast<uint32_t>(b[at + 3]) << 24);
}

/// Reads the golden inputs: 16-bit PCM mono WAV, walking the RIFF chunks to "data".
std::vector<float> read_wav_mono16(const std::string& path) {
  const std::vector<uint8_t> bytes = sluice::test::read_bytes(path);
  REQUIRE(bytes.size() >= 12);
  REQUIRE(std::memcmp(bytes.data(), "RIFF", 4) == 0);
  REQUIRE(std::memcmp(bytes.data() + 8, "WAVE", 4) == 0);
  std::size_t at = 12;
  while (at + 8 <= bytes.size()) {
    const uint32_t size = le32(bytes, at + 4);
    if (std::memcmp(bytes.data() + at, "data", 4) == 0) {
      REQUIRE(at + 8 + size <= bytes.size());
      std::vector<float> samples(size / 2);
      for (std::size_t i = 0; i < samples.size(); ++i) {
        const auto v = static_cast<int16_t>(bytes[at + 8 + 2 * i] | (bytes[at + 9 + 2 * i] << 8));
        samples[i] = static_cast<float>(v) * pcm16_scale;
      }
      return samples;
    }
    at += 8 + size + (size & 1u);
  }
  FAIL("no data chunk in " << path);
  return {};
}

std::vector<float> read_f32(const std::string& path) {
  const std::vector<uint8_t> bytes = sluice::test::read_bytes(path);
  REQUIRE(bytes.size() % sizeof(float) == 0);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

fbank_computer default_computer() {
  auto fc = fbank_computer::create(sluice::config::fbank_config{});
  REQUIRE(fc);
  return std::move(*fc);
}

std::vector<float> test_signal(std::size_t n) {
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = 0.3f * std::sin(0.05f * static_cast<float>(i)) + noise(rng);
  }
  return x;
}

/// Feeds `x` in chunks of the sizes `next_chunk` returns and concatenates the frames.
template <class Next>
std::vector<float> stream_all(streaming_fbank& s, const std::vector<float>& x, Next next_chunk) {
  std::vector<float> out;
  std::size_t at = 0;
  while (at < x.size()) {
    const std::size_t n = std::min(next_chunk(), x.size() - at);
    const std::vector<float> frames = s.accept(std::span<const float>(x).subspan(at, n));
    REQUIRE(frames.size() % s.num_mels() == 0);
    out.insert(out.end(), frames.begin(), frames.end());
    at += n;
  }
  return out;
}

}  // namespace

TEST_SUITE("fbank") {
  TEST_CASE("geometry of the default config at 16 kHz") {
    const fbank_computer fc = default_computer();
    CHECK(fc.frame_length() == 400);
    CHECK(fc.frame_shift() == 160);
    CHECK(fc.fft_size() == 512);
    CHECK(fc.num_mels() == 80);
  }

  TEST_CASE("frame count follows snip_edges") {
    const fbank_computer fc = default_computer();
    CHECK(fc.num_frames(0) == 0);
    CHECK(fc.num_frames(399) == 0);
    CHECK(fc.num_frames(400) == 1);
    CHECK(fc.num_frames(559) == 1);
    CHECK(fc.num_frames(560) == 2);
    CHECK(fc.num_frames(16000) == 98);
    for (std::size_t n : {0u, 399u, 400u, 401u, 1234u, 16000u}) {
      CAPTURE(n);
      CHECK(fc.compute(test_signal(n)).size() == fc.num_frames(n) * fc.num_mels());
    }
  }

  TEST_CASE("matches torchaudio kaldi fbank on the golden files") {
    // NAME.fbank.f32 is torchaudio on a float64 waveform; NAME.fbank_torch_float32.f32 the same on
    // float32, whose own rounding is up to 0.5 off in bins far below a frame's peak (see
    // tools/golden/make_fbank_golden.py). We hold ourselves to the float64 result, and to the
    // float32 one wherever it is itself within reach of the float64 result.
    const fbank_computer fc = default_computer();
    const std::string suffix = ".fbank.f32";
    std::size_t cases = 0;
    float worst = 0.0f;
    float worst_vs_float32 = 0.0f;
    for (const auto& entry : std::filesystem::directory_iterator(golden_dir)) {
      const std::string path = entry.path().string();
      if (path.size() < suffix.size() ||
          path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      const std::string stem = path.substr(0, path.size() - suffix.size());
      CAPTURE(stem);
      const std::vector<float> samples = read_wav_mono16(stem + ".wav");
      const std::vector<float> want = read_f32(path);
      const std::vector<float> want32 = read_f32(stem + ".fbank_torch_float32.f32");
      const std::vector<float> got = fc.compute(samples);
      REQUIRE(got.size() == want.size());
      REQUIRE(got.size() == want32.size());
      REQUIRE(got.size() == fc.num_frames(samples.size()) * fc.num_mels());
      float max_abs = 0.0f;
      float max_abs32 = 0.0f;
      std::size_t beyond_float32_gap = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        max_abs = std::max(max_abs, std::abs(got[i] - want[i]));
        max_abs32 = std::max(max_abs32, std::abs(got[i] - want32[i]));
        if (std::abs(got[i] - want32[i]) > golden_tolerance + std::abs(want[i] - want32[i])) {
          ++beyond_float32_gap;
        }
      }
      MESSAGE(stem << ": " << got.size() / fc.num_mels() << " frames, max abs error " << max_abs
                   << " vs torch float64, " << max_abs32 << " vs torch float32");
      CHECK(max_abs <= golden_tolerance);
      CHECK(beyond_float32_gap == 0);
      worst = std::max(worst, max_abs);
      worst_vs_float32 = std::max(worst_vs_float32, max_abs32);
      ++cases;
    }
    CHECK(cases >= 4);
    MESSAGE("worst max abs error: " << worst << " vs torch float64, " << worst_vs_float32
                                    << " vs torch float32");
  }

  TEST_CASE("silence hits the log floor, not -inf") {
    const fbank_computer fc = default_computer();
    const std::vector<float> feats = fc.compute(std::vector<float>(800, 0.25f));  // DC only
    REQUIRE(!feats.empty());
    const float floor = std::log(std::numeric_limits<float>::epsilon());
    for (float v : feats) CHECK(v == doctest::Approx(floor));
  }

  TEST_CASE("streaming equals offline for any chunking") {
    const fbank_computer fc = default_computer();
    const std::vector<float> x = test_signal(16000 + 123);
    const std::vector<float> offline = fc.compute(x);
    auto shared = std::make_shared<const fbank_computer>(fc);
    for (std::size_t chunk : {1u, 7u, 160u, 401u, 4000u, 20000u}) {
      CAPTURE(chunk);
      streaming_fbank s(shared);
      const std::vector<float> streamed = stream_all(s, x, [&] { return chunk; });
      CHECK(streamed == offline);
      CHECK(s.num_frames_out() == fc.num_frames(x.size()));
      CHECK(s.num_samples_in() == x.size());
    }
    std::mt19937 rng(3);
    std::uniform_int_distribution<std::size_t> size(0, 700);
    for (int trial = 0; trial < 5; ++trial) {
      streaming_fbank s(shared);
      CHECK(stream_all(s, x, [&] { return size(rng); }) == offline);
    }
  }

  TEST_CASE("streaming with a shift longer than the window skips the gap") {
    sluice::config::fbank_config cfg;
    cfg.frame_length_ms = 10.0;
    cfg.frame_shift_ms = 25.0;
    cfg.num_mel_bins = 23;
    auto fc = fbank_computer::create(cfg);
    REQUIRE(fc);
    const std::vector<float> x = test_signal(5000);
    const std::vector<float> offline = fc->compute(x);
    for (std::size_t chunk : {1u, 13u, 399u}) {
      CAPTURE(chunk);
      streaming_fbank s(std::make_shared<const fbank_computer>(*fc));
      CHECK(stream_all(s, x, [&] { return chunk; }) == offline);
    }
  }

  TEST_CASE("reset starts a new stream") {
    auto s = streaming_fbank::create(sluice::config::fbank_config{});
    REQUIRE(s);
    const std::vector<float> x = test_signal(1000);
    const std::vector<float> first = s->accept(std::span<const float>(x).first(555));
    s->reset();
    CHECK(s->num_frames_out() == 0);
    CHECK(s->accept(x) == s->computer().compute(x));
    CHECK(first.size() == 80);
  }

  TEST_CASE("bad configs are errors, not crashes") {
    using sluice::errc;
    auto expect_error = [](sluice::config::fbank_config cfg, int rate, errc code) {
      auto fc = fbank_computer::create(cfg, rate);
      REQUIRE_FALSE(fc);
      CHECK(fc.error().code == code);
      CHECK(!fc.error().message.empty());
      MESSAGE(fc.error().message);
    };
    sluice::config::fbank_config cfg;
    expect_error(cfg, 0, errc::invalid_argument);
    expect_error(cfg, -16000, errc::invalid_argument);

    auto c = cfg;
    c.frame_length_ms = 0.05;  // under 2 samples
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.frame_shift_ms = 0.01;  // under 1 sample
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.num_mel_bins = 3;
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.num_mel_bins = 256;  // more triangles than a 512-point FFT resolves at low frequencies
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.low_freq_hz = 9000.0;  // above Nyquist
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.low_freq_hz = 200.0;  // band edges crossed
    c.high_freq_hz = 100.0;
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.high_freq_hz = -9000.0;  // offset past zero
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.preemphasis = 1.5;
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.frame_length_ms = 1e6;  // window beyond the largest FFT
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.frame_length_ms = std::numeric_limits<double>::quiet_NaN();
    expect_error(c, 16000, errc::invalid_config);
    c = cfg;
    c.frame_shift_ms = std::numeric_limits<double>::infinity();
    expect_error(c, 16000, errc::invalid_config);
  }

  TEST_CASE("other sample rates and band limits work") {
    sluice::config::fbank_config cfg;
    cfg.high_freq_hz = -400.0;
    auto fc = fbank_computer::create(cfg, 8000);
    REQUIRE(fc);
    CHECK(fc->frame_length() == 200);
    CHECK(fc->frame_shift() == 80);
    CHECK(fc->fft_size() == 256);
    const std::vector<float> feats = fc->compute(test_signal(8000));
    CHECK(feats.size() == fc->num_frames(8000) * 80);
    for (float v : feats) CHECK(std::isfinite(v));
  }
}
