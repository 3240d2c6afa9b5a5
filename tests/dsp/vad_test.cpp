#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>
#include <random>
#include <vector>

#include "dsp/vad.hpp"
#include "tests/dsp/speech_scene.hpp"

using namespace sluice;
using namespace sluice::dsp;
using namespace sluice::test;

namespace {

/// The requirement: detected speech boundaries within 100 ms of the truth.
constexpr int64_t boundary_tolerance = 1600;

struct utterance_spec {
  const char* text;
  const char* voice;
};

/// Scenes of two utterances: 1.0 s silence, A, 1.5 s silence, B, 1.0 s silence. Made once per
/// run: espeak-ng and sox take a moment.
struct two_utterance_scenes {
  temp_dir dir;
  std::vector<scene> scenes;
  two_utterance_scenes() {
    const utterance_spec pairs[][2] = {
        {{"Thank you for calling customer support.", "en-us"},
         {"My account number is four five six seven.", "en+f3"}},
        {{"Could you please confirm your date of birth?", "en"},
         {"I will transfer you to the billing department.", "en-us+m3"}},
        {{"Sure I can check that for you.", "en+f3"}, {"Fine.", "en-us+m3"}},
    };
    for (const auto& pair : pairs) {
      scene s;
      s.pause(1.0);
      s.say(speak16k(dir, pair[0].text, pair[0].voice));
      s.pause(1.5);
      s.say(speak16k(dir, pair[1].text, pair[1].voice));
      s.pause(1.0);
      scenes.push_back(std::move(s));
    }
  }
};

const two_utterance_scenes& scenes() {
  static const two_utterance_scenes fixture;
  return fixture;
}

std::vector<speech_region> detect(const std::vector<float>& x, const config::vad_config& cfg = {}) {
  auto analysis = analyze_speech(x, cfg);
  REQUIRE_MESSAGE(analysis.has_value(), analysis.error().message);
  return analysis->regions;
}

/// Everything a vad reports for `x` fed in chunks of `chunk` samples (0 = all at once).
vad_output run_chunked(const std::vector<float>& x, std::size_t chunk) {
  auto detector = vad::create(config::vad_config{});
  REQUIRE(detector.has_value());
  vad_output all;
  bool numbered_in_order = true;
  auto append = [&](vad_output&& out) {
    numbered_in_order = numbered_in_order && out.first_frame == static_cast<int64_t>(all.frames.size());
    all.frames.insert(all.frames.end(), out.frames.begin(), out.frames.end());
    all.events.insert(all.events.end(), out.events.begin(), out.events.end());
  };
  const std::size_t step = chunk == 0 ? x.size() : chunk;
  for (std::size_t i = 0; i < x.size(); i += step) {
    const std::size_t n = std::min(step, x.size() - i);
    append(detector->accept(std::span<const float>(x).subspan(i, n)));
  }
  append(detector->finish());
  CHECK(numbered_in_order);
  return all;
}

std::vector<float> sine(double hz, double amplitude, std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(amplitude * std::sin(2.0 * std::numbers::pi * hz * static_cast<double>(i) / scene_rate));
  return x;
}

std::vector<float> scaled(std::vector<float> x, double dbfs) {
  const float gain = static_cast<float>(std::pow(10.0, dbfs / 20.0));
  for (float& v : x) v *= gain;
  return x;
}

}  // namespace

TEST_SUITE("vad") {
  TEST_CASE("band energy is calibrated and whitened noise is flat") {
    auto spectrum = vad_spectrum::create(300, 3400, 7600, scene_rate);
    REQUIRE(spectrum.has_value());
    spectrum->analyze(sine(1000, 1.0, vad_spectrum::window_samples));
    CHECK(band_energy_db(spectrum->speech_band()) == doctest::Approx(-3.0).epsilon(0.05));
    CHECK(band_energy_db(spectrum->high_band()) < -40.0f);
    spectrum->analyze(sine(5000, 1.0, vad_spectrum::window_samples));
    CHECK(band_energy_db(spectrum->high_band()) == doctest::Approx(-3.0).epsilon(0.05));
    spectrum->analyze(sine(100, 1.0, vad_spectrum::window_samples));
    CHECK(band_energy_db(spectrum->speech_band()) < -40.0f);

    // Brown noise whitened by its own mean spectrum is as flat as white noise: about -2.5 dB.
    const std::vector<float> brown = make_noise(noise_kind::brown, scene_rate, 3);
    std::vector<float> shape(spectrum->speech_bins(), 0.0f);
    constexpr int frames = 50;
    for (int i = 0; i < frames; ++i) {
      spectrum->analyze(std::span<const float>(brown).subspan(static_cast<std::size_t>(i) * vad_hop_samples,
                                                              vad_spectrum::window_samples));
      for (std::size_t k = 0; k < shape.size(); ++k) shape[k] += spectrum->speech_band()[k] / frames;
    }
    spectrum->analyze(std::span<const float>(brown).subspan(scene_rate / 2, vad_spectrum::window_samples));
    CHECK(whitened_flatness_db(spectrum->speech_band(), shape) > -4.5f);
    CHECK(band_energy_db(std::vector<float>(8, 0.0f)) == energy_floor_db);
  }

  TEST_CASE("whitened flatness is 10 log10 of the geometric over the arithmetic mean of the ratios, over 50 decades") {
    // Against the textbook form (a log per bin, in long double) on spectra from 1e-12 to 1e4 over
    // noise shapes from 0 to 1e2, then (n = 300) from 1e-12 to 1e37, whose running product would
    // leave a double's range; and against the closed form for one peak over a flat floor.
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> decade(-12.0, 4.0), shape_decade(-12.0, 2.0);
    for (const std::size_t n : {1u, 7u, 8u, 9u, 63u, 200u, 300u}) {
      if (n == 300u) decade = std::uniform_real_distribution<double>(-12.0, 37.0);
      std::vector<float> power(n), shape(n);
      for (std::size_t k = 0; k < n; ++k) {
        power[k] = static_cast<float>(std::pow(10.0, decade(rng)));
        shape[k] = k % 5 == 0 ? 0.0f : static_cast<float>(std::pow(10.0, shape_decade(rng)));
      }
      long double sum_log = 0, sum = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const long double r = (static_cast<long double>(power[k]) + 1e-10L) / (static_cast<long double>(shape[k]) + 1e-10L);
        sum_log += std::log(r);
        sum += r;
      }
      const double want = std::min(0.0, static_cast<double>(10.0L * (sum_log / n - std::log(sum / n)) / std::log(10.0L)));
      CHECK(whitened_flatness_db(power, shape) == doctest::Approx(want).epsilon(1e-5));
    }
    // One bin 1000x its floor, 31 at their floor: 10 log10(1000^(1/32) / ((1000 + 31) / 32)).
    std::vector<float> floor_shape(32, 1e-3f), peak(32, 1e-3f);
    peak[5] = 1.0f;
    const double closed = 10.0 * (std::log10(1000.0) / 32.0 - std::log10((1000.0 + 31.0) / 32.0));
    CHECK(whitened_flatness_db(peak, floor_shape) == doctest::Approx(closed).epsilon(1e-5));
    CHECK(whitened_flatness_db(floor_shape, floor_shape) == doctest::Approx(0.0).epsilon(1e-6));
  }

  TEST_CASE("whitened flatness gives the same bits as renormalising the product at every bin, at extreme ratios too") {
    // The function renormalises its running product every fourth bin; the claim is that this is
    // bit-for-bit the every-bin form. The reference here is that form, written out; spectra span
    // float's whole range (ratios from ~1e-49 to ~1e48) with digital-silence bins and noise shapes.
    auto every_bin = [](const std::vector<float>& power, const std::vector<float>& shape) {
      double product = 1.0, sum = 0.0;
      long exponent = 0;
      int e = 0;
      for (std::size_t k = 0; k < power.size(); ++k) {
        const double ratio = (power[k] + 1e-10) / (shape[k] + 1e-10);
        product *= ratio;
        sum += ratio;
        product = std::frexp(product, &e);
        exponent += e;
      }
      const double count = static_cast<double>(power.size());
      const double db = 10.0 * ((std::log(product) + static_cast<double>(exponent) * std::numbers::ln2) / count -
                                std::log(sum / count)) / std::numbers::ln10;
      return static_cast<float>(std::min(0.0, db));
    };
    std::mt19937 rng(23);
    std::uniform_real_distribution<double> decade(-45.0, 38.0);
    int compared = 0;
    for (const std::size_t n : {1u, 2u, 3u, 4u, 5u, 8u, 13u, 64u, 129u, 256u}) {
      for (int rep = 0; rep < 50; ++rep) {
        std::vector<float> power(n), shape(n);
        for (std::size_t k = 0; k < n; ++k) {
          power[k] = rep % 7 == 0 && k % 3 == 0 ? 0.0f : static_cast<float>(std::pow(10.0, decade(rng)));
          shape[k] = rep % 5 == 0 && k % 2 == 0 ? std::numeric_limits<float>::max()
                                                 : static_cast<float>(std::pow(10.0, decade(rng)));
        }
        const float got = whitened_flatness_db(power, shape);
        const float want = every_bin(power, shape);
        CAPTURE(n);
        CAPTURE(rep);
        REQUIRE(std::isfinite(want));
        CHECK(got == want);
        ++compared;
      }
    }
    CHECK(compared == 500);
  }

  TEST_CASE("an invalid config is an error value") {
    config::vad_config cfg;
    cfg.threshold_db = 0.5;
    auto r = vad::create(cfg);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_config);
    CHECK(r.error().message.find("threshold_db") != std::string::npos);

    cfg = {};
    cfg.band_low_hz = 3000;
    cfg.band_high_hz = 2000;
    CHECK_FALSE(vad::create(cfg).has_value());
    cfg = {};
    cfg.preroll_ms = 200;
    cfg.hangover_ms = 200;
    CHECK_FALSE(analyze_speech(std::vector<float>(100, 0.0f), cfg).has_value());
    CHECK(vad::create(config::vad_config{}).has_value());
  }

  TEST_CASE("speech boundaries are within 100 ms in white, pink, brown and telephone noise") {
    const auto& fixture = scenes();
    struct condition {
      noise_kind kind;
      bool phone;
    };
    const condition conditions[] = {{noise_kind::white, false}, {noise_kind::pink, false},
                                    {noise_kind::brown, false}, {noise_kind::white, true}};
    const double snrs_db[] = {20, 10, 5};
    std::ostringstream table;
    table << "boundary error (ms) over " << fixture.scenes.size() * 2
          << " utterances: [min start, max start] [min end, max end]\n";
    std::vector<std::vector<span_bounds>> phone_truth;
    for (const scene& clean : fixture.scenes) phone_truth.push_back(through_telephone(fixture.dir, clean).truth);
    uint32_t seed = 1;
    for (const condition& c : conditions) {
      for (double snr : snrs_db) {
        double start_lo = 1e9, start_hi = -1e9, end_lo = 1e9, end_hi = -1e9;
        for (std::size_t k = 0; k < fixture.scenes.size(); ++k) {
          const scene& clean = fixture.scenes[k];
          REQUIRE(clean.truth.size() == 2);
          REQUIRE(clean.truth[0].end > clean.truth[0].start);
          std::vector<float> x = noisy(clean, c.kind, snr, seed++);
          std::vector<span_bounds> truth = clean.truth;
          if (c.phone) {
            x = telephone(fixture.dir, x);
            truth = phone_truth[k];
          }
          const std::vector<speech_region> found = detect(x);
          INFO(std::string(to_string(c.kind)) << (c.phone ? " via telephone" : "") << " at " << snr << " dB SNR, scene " << k);
          REQUIRE(found.size() == truth.size());
          for (std::size_t i = 0; i < found.size(); ++i) {
            const int64_t start_error = found[i].start_sample - truth[i].start;
            const int64_t end_error = found[i].end_sample - truth[i].end;
            CHECK(std::abs(start_error) <= boundary_tolerance);
            CHECK(std::abs(end_error) <= boundary_tolerance);
            start_lo = std::min(start_lo, to_ms(start_error));
            start_hi = std::max(start_hi, to_ms(start_error));
            end_lo = std::min(end_lo, to_ms(end_error));
            end_hi = std::max(end_hi, to_ms(end_error));
          }
        }
        table << to_string(c.kind) << (c.phone ? "/phone" : "") << " " << snr << " dB: [" << std::lround(start_lo)
              << ", " << std::lround(start_hi) << "] [" << std::lround(end_lo) << ", " << std::lround(end_hi) << "]\n";
      }
    }
    MESSAGE(table.str());
  }

  TEST_CASE("clean speech in digital silence is found") {
    for (const scene& s : scenes().scenes) {
      const std::vector<speech_region> found = detect(s.clean);
      REQUIRE(found.size() == s.truth.size());
      for (std::size_t i = 0; i < found.size(); ++i) {
        CHECK(std::abs(found[i].start_sample - s.truth[i].start) <= boundary_tolerance);
        CHECK(std::abs(found[i].end_sample - s.truth[i].end) <= boundary_tolerance);
      }
    }
  }

  TEST_CASE("noise alone is never speech") {
    const auto& dir = scenes().dir;
    const std::size_t five_s = static_cast<std::size_t>(seconds(5.0));
    SUBCASE("steady noise of any colour and level, also through a telephone or after silence") {
      uint32_t seed = 100;
      for (noise_kind kind : {noise_kind::white, noise_kind::pink, noise_kind::brown}) {
        for (double level_dbfs : {-45.0, -30.0, -15.0}) {
          INFO(std::string(to_string(kind)) << " noise at " << level_dbfs << " dBFS");
          const std::vector<float> noise = scaled(make_noise(kind, five_s, seed++), level_dbfs);
          CHECK(detect(noise).empty());
          CHECK(detect(telephone(dir, noise)).empty());

          // A call often opens with digital silence: the floor must learn the noise when it comes.
          std::vector<float> late(static_cast<std::size_t>(seconds(1.0)), 0.0f);
          late.insert(late.end(), noise.begin(), noise.end());
          CHECK(detect(late).empty());
        }
      }
    }
    SUBCASE("a noise that steps up by 15 dB is learnt, not taken for speech") {
      std::vector<float> x = scaled(make_noise(noise_kind::pink, five_s, 7), -45.0);
      const std::vector<float> louder = scaled(make_noise(noise_kind::pink, five_s, 8), -30.0);
      x.insert(x.end(), louder.begin(), louder.end());
      CHECK(detect(x).empty());
    }
    SUBCASE("clicks are not speech") {
      std::vector<float> x = scaled(make_noise(noise_kind::white, five_s, 9), -50.0);
      constexpr std::size_t click_every = 7919;
      constexpr float click_amplitude = 0.8f;
      for (std::size_t i = click_every; i < x.size(); i += click_every) x[i] += click_amplitude;
      CHECK(detect(x).empty());
    }
    SUBCASE("a steady tone is not speech") {
      std::vector<float> x = sine(440, 0.1, five_s);
      CHECK(detect(x).empty());
    }
  }

  TEST_CASE("results do not depend on how the samples are chunked") {
    const scene& s = scenes().scenes[0];
    const std::vector<float> x = noisy(s, noise_kind::pink, 10, 42);
    const vad_output whole = run_chunked(x, 0);
    REQUIRE(whole.events.size() == 4);
    CHECK(whole.frames.size() == (x.size() + vad_hop_samples - 1) / vad_hop_samples);
    for (std::size_t chunk : {std::size_t{1}, std::size_t{160}, std::size_t{1234}}) {
      INFO("chunk " << chunk);
      const vad_output part = run_chunked(x, chunk);
      CHECK(part.events == whole.events);
      REQUIRE(part.frames.size() == whole.frames.size());
      bool same_frames = true;
      for (std::size_t i = 0; i < part.frames.size(); ++i) {
        const vad_frame& a = part.frames[i];
        const vad_frame& b = whole.frames[i];
        same_frames = same_frames && a.energy_db == b.energy_db && a.floor_db == b.floor_db &&
                      a.flatness_db == b.flatness_db && a.high_energy_db == b.high_energy_db &&
                      a.active == b.active;
      }
      CHECK(same_frames);
    }
  }

  TEST_CASE("events come in start/end pairs, in order, and streaming matches analyze_speech") {
    const scene& s = scenes().scenes[1];
    const std::vector<float> x = noisy(s, noise_kind::white, 10, 5);
    const vad_output out = run_chunked(x, 480);
    const std::vector<speech_region> regions = detect(x);
    REQUIRE(out.events.size() == 2 * regions.size());
    int64_t previous = 0;
    for (std::size_t i = 0; i < out.events.size(); ++i) {
      const vad_event& e = out.events[i];
      CHECK(e.kind == (i % 2 == 0 ? vad_event_kind::speech_start : vad_event_kind::speech_end));
      CHECK(e.sample >= previous);
      // An event is never about the future of the frame that decided it.
      CHECK(e.sample <= (e.decided_at_frame + 1) * vad_hop_samples);
      previous = e.sample;
    }
    for (std::size_t i = 0; i < regions.size(); ++i) {
      CHECK(regions[i].start_sample == out.events[2 * i].sample);
      CHECK(regions[i].end_sample == out.events[2 * i + 1].sample);
    }
  }

  TEST_CASE("speech at the very start and end of a stream") {
    temp_dir dir;
    const std::vector<float> said = speak16k(dir, "Can you hear me now?", "en-us");
    REQUIRE_FALSE(said.empty());
    const span_bounds b = audible_bounds(said);
    std::vector<float> x(said.begin() + b.start, said.begin() + b.end);
    const std::vector<speech_region> found = detect(x);
    REQUIRE(found.size() == 1);
    CHECK(found[0].start_sample <= boundary_tolerance);
    CHECK(found[0].end_sample == static_cast<int64_t>(x.size()));
  }

  TEST_CASE("non-finite samples are taken as silence") {
    std::vector<float> x = scaled(make_noise(noise_kind::white, static_cast<std::size_t>(seconds(2.0)), 11), -40.0);
    x[1000] = std::numeric_limits<float>::quiet_NaN();
    x[20000] = std::numeric_limits<float>::infinity();
    auto analysis = analyze_speech(x, config::vad_config{});
    REQUIRE(analysis.has_value());
    for (const vad_frame& f : analysis->frames) {
      CHECK(std::isfinite(f.energy_db));
      CHECK(std::isfinite(f.floor_db));
    }
    CHECK(analysis->regions.empty());
    CHECK(detect({}).empty());
  }
}
