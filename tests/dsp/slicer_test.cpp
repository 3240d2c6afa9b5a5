#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dsp/slicer.hpp"
#include "tests/dsp/speech_scene.hpp"

using namespace sluice;
using namespace sluice::dsp;
using namespace sluice::test;

namespace {

constexpr int64_t boundary_tolerance = 1600;  // 100 ms at 16 kHz
constexpr double call_s = 40.0;

/// About 40 s of call-center sentences, voices in turn, 0.3 .. 0.9 s pauses, pink noise at 20 dB.
struct long_call {
  temp_dir dir;
  scene s;
  std::vector<float> x;
  long_call() : s(many_sentences(dir, call_s, 0.3, 0.9, 5)), x(noisy(s, noise_kind::pink, 20, 31)) {}
};

const long_call& call() {
  static const long_call fixture;
  return fixture;
}

void check_ordered_within(const std::vector<segment>& segments, int64_t n) {
  int64_t previous_end = 0;
  for (const segment& seg : segments) {
    CHECK(seg.start_sample >= previous_end);
    CHECK(seg.end_sample > seg.start_sample);
    previous_end = seg.end_sample;
  }
  CHECK(previous_end <= n);
}

void check_lengths(const std::vector<segment>& segments, const config::segment_config& cfg) {
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const double length_s = to_ms(segments[i].end_sample - segments[i].start_sample) / 1000.0;
    INFO("segment " << i << " of " << segments.size() << ": " << length_s << " s");
    CHECK(length_s <= cfg.max_s);
    if (i + 1 < segments.size()) CHECK(length_s >= cfg.min_s);
  }
}

/// Mean power in dB of `x` over [centre - half, centre + half).
double level_db(const std::vector<float>& x, int64_t centre, int64_t half) {
  const int64_t lo = std::max<int64_t>(0, centre - half);
  const int64_t hi = std::min<int64_t>(static_cast<int64_t>(x.size()), centre + half);
  double sum = 0;
  for (int64_t i = lo; i < hi; ++i) sum += static_cast<double>(x[i]) * x[i];
  constexpr double tiny = 1e-12;
  return 10.0 * std::log10(sum / static_cast<double>(std::max<int64_t>(1, hi - lo)) + tiny);
}

std::vector<vad_frame> flat_frames(double seconds_long, float energy_db) {
  std::vector<vad_frame> frames(static_cast<std::size_t>(seconds(seconds_long) / vad_hop_samples));
  for (vad_frame& f : frames) f.energy_db = energy_db;
  return frames;
}

void plant_quiet(std::vector<vad_frame>& frames, double at_s) {
  constexpr float quiet_db = -60.0f;
  constexpr int half_width = 2;
  const auto centre = static_cast<int64_t>(seconds(at_s) / vad_hop_samples);
  for (int64_t k = centre - half_width; k <= centre + half_width; ++k) frames[static_cast<std::size_t>(k)].energy_db = quiet_db;
}

}  // namespace

TEST_SUITE("vad") {
  TEST_CASE("slicer: a 40 s call becomes 8-15 s segments that cover all its speech") {
    const long_call& c = call();
    REQUIRE(to_ms(static_cast<int64_t>(c.x.size())) >= 1000.0 * (call_s - 1.0));
    const config::segment_config cfg;
    auto segments = slice(c.x, config::vad_config{}, cfg);
    REQUIRE_MESSAGE(segments.has_value(), segments.error().message);
    REQUIRE(segments->size() >= 3);
    check_ordered_within(*segments, static_cast<int64_t>(c.x.size()));
    check_lengths(*segments, cfg);
    for (const span_bounds& t : c.s.truth) {
      const bool covered = std::any_of(segments->begin(), segments->end(), [&](const segment& seg) {
        return seg.start_sample <= t.start + boundary_tolerance && t.end - boundary_tolerance <= seg.end_sample;
      });
      INFO("utterance at " << to_ms(t.start) << " .. " << to_ms(t.end) << " ms");
      CHECK(covered);
    }
  }

  TEST_CASE("slicer: continuous speech is cut at its quiet points") {
    const long_call& c = call();
    config::vad_config vad_cfg;
    vad_cfg.min_silence_ms = 2000;  // bridges every pause: the whole call is one speech region
    auto analysis = analyze_speech(c.x, vad_cfg);
    REQUIRE(analysis.has_value());
    REQUIRE(analysis->regions.size() == 1);

    const config::segment_config cfg;
    auto segments = slice(c.x, vad_cfg, cfg);
    REQUIRE(segments.has_value());
    REQUIRE(segments->size() >= 3);
    check_ordered_within(*segments, static_cast<int64_t>(c.x.size()));
    check_lengths(*segments, cfg);

    // Each cut lies in a pause between sentences: the clean signal around it is near silent.
    constexpr double near_silent_below_speech_db = 30.0;
    const double speech_db = 10.0 * std::log10(c.s.speech_power());
    const int64_t half_window = seconds(0.02);
    for (std::size_t i = 0; i + 1 < segments->size(); ++i) {
      const int64_t cut = (*segments)[i].end_sample;
      CHECK(cut == (*segments)[i + 1].start_sample);
      INFO("cut at " << to_ms(cut) << " ms");
      CHECK(level_db(c.s.clean, cut, half_window) < speech_db - near_silent_below_speech_db);
    }
  }

  TEST_CASE("slicer: grouping rules on planted regions") {
    const config::segment_config cfg;  // 8 .. 15 s
    CHECK(group_regions({}, {}, cfg).empty());

    SUBCASE("neighbours merge while the segment stays within max_s") {
      const std::vector<speech_region> regions = {
          {seconds(1), seconds(4)}, {seconds(5), seconds(9)}, {seconds(10), seconds(15)}, {seconds(17), seconds(20)}};
      const auto frames = flat_frames(21, -30.0f);
      const std::vector<segment> expected = {{seconds(1), seconds(15)}, {seconds(17), seconds(20)}};
      CHECK(group_regions(regions, frames, cfg) == expected);
    }
    SUBCASE("a long region is cut at planted quiet points") {
      auto frames = flat_frames(41, -20.0f);
      plant_quiet(frames, 11.0);
      plant_quiet(frames, 23.0);
      plant_quiet(frames, 31.5);
      const std::vector<speech_region> regions = {{0, seconds(40)}};
      const std::vector<segment> expected = {
          {0, seconds(11)}, {seconds(11), seconds(23)}, {seconds(23), seconds(31.5)}, {seconds(31.5), seconds(40)}};
      CHECK(group_regions(regions, frames, cfg) == expected);
    }
    SUBCASE("a region a little over max_s leaves min_s for its rest") {
      const auto frames = flat_frames(17, -20.0f);
      const std::vector<speech_region> regions = {{0, seconds(16)}};
      const std::vector<segment> expected = {{0, seconds(8)}, {seconds(8), seconds(16)}};
      CHECK(group_regions(regions, frames, cfg) == expected);
    }
  }

  TEST_CASE("segment_stream: the same segments as slice of the whole recording, however the audio is split, each given out early") {
    const long_call& c = call();
    const auto n = static_cast<int64_t>(c.x.size());
    struct variant {
      const char* name;
      config::vad_config vad;
      config::segment_config seg;
    };
    std::vector<variant> variants(3);
    variants[0].name = "defaults: pauses end segments";
    variants[1].name = "one long region: every cut is inside it";
    variants[1].vad.min_silence_ms = 2000;
    variants[2].name = "short segments: many of each kind";
    variants[2].seg.min_s = 1.0;
    variants[2].seg.max_s = 2.5;
    for (const auto& v : variants) {
      CAPTURE(std::string(v.name));
      auto whole = slice(c.x, v.vad, v.seg);
      REQUIRE(whole.has_value());
      REQUIRE(whole->size() >= 3);
      for (const int64_t piece : {int64_t{1}, int64_t{157}, int64_t{160}, int64_t{16000}, int64_t{50000}, n}) {
        CAPTURE(piece);
        auto stream = segment_stream::create(v.vad, v.seg);
        REQUIRE(stream.has_value());
        std::vector<segment> got;
        std::vector<int64_t> fed_when_out;  // samples fed when each segment came out
        for (int64_t at = 0; at < n; at += piece) {
          const int64_t len = std::min(piece, n - at);
          for (const segment& s : stream->accept(std::span<const float>(c.x.data() + at, static_cast<std::size_t>(len)))) {
            got.push_back(s);
            fed_when_out.push_back(at + len);
          }
        }
        for (const segment& s : stream->finish()) {
          got.push_back(s);
          fed_when_out.push_back(n);
        }
        CHECK(got == *whole);
        if (piece > 16000 || got != *whole) continue;
        // Pauses in this call are under a second, so nothing after start + max_s + min_s (where
        // a cut inside one long region stops depending on its end), plus a second's pause and
        // the VAD's confirmation lag, can change a segment: it must be out by then.
        const int64_t lookahead = seconds(v.seg.max_s + v.seg.min_s + 2.0);
        for (std::size_t i = 0; i + 1 < got.size(); ++i) {
          CAPTURE(i);
          CHECK(fed_when_out[i] <= got[i].start_sample + lookahead);
        }
        REQUIRE(got[0].start_sample + lookahead < n);
        CHECK(fed_when_out[0] < n);  // so the first went out before finish()
      }
    }
  }

  TEST_CASE("segment_stream: silence gives no segment, and a bad section is an error value") {
    auto stream = segment_stream::create(config::vad_config{}, config::segment_config{});
    REQUIRE(stream.has_value());
    CHECK(stream->accept(std::vector<float>(seconds(30), 0.0f)).empty());
    CHECK(stream->finish().empty());
    config::segment_config bad;
    bad.min_s = 20;
    auto r = segment_stream::create(config::vad_config{}, bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_config);
  }

  TEST_CASE("slicer: an invalid config is an error value") {
    config::segment_config cfg;
    cfg.min_s = 20;
    auto r = slice(std::vector<float>(1000, 0.0f), config::vad_config{}, cfg);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_config);
    CHECK(slice({}, config::vad_config{}, config::segment_config{}).value().empty());
  }
}
