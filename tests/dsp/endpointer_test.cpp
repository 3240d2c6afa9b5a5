#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dsp/endpointer.hpp"
#include "tests/dsp/speech_scene.hpp"

using namespace sluice;
using namespace sluice::dsp;
using namespace sluice::test;

namespace {

constexpr int64_t boundary_tolerance = 1600;  // 100 ms at 16 kHz
constexpr std::size_t ten_ms = 160;

/// An event and how many samples had been fed when it came out.
struct timed_event {
  endpoint_event event;
  int64_t fed = 0;
};

std::vector<timed_event> run_endpointer(const std::vector<float>& x, const config::endpoint_config& cfg,
                                        std::size_t chunk) {
  auto ep = endpointer::create(config::vad_config{}, cfg);
  REQUIRE_MESSAGE(ep.has_value(), ep.error().message);
  std::vector<timed_event> out;
  const std::size_t step = chunk == 0 ? std::max<std::size_t>(x.size(), 1) : chunk;
  int64_t fed = 0;
  for (std::size_t i = 0; i < x.size(); i += step) {
    const std::size_t n = std::min(step, x.size() - i);
    fed += static_cast<int64_t>(n);
    for (const endpoint_event& e : ep->accept(std::span<const float>(x).subspan(i, n))) out.push_back({e, fed});
  }
  for (const endpoint_event& e : ep->finish()) out.push_back({e, fed});
  return out;
}

std::vector<endpoint_event> events_of(const std::vector<timed_event>& timed) {
  std::vector<endpoint_event> out;
  for (const auto& t : timed) out.push_back(t.event);
  return out;
}

/// Utterance A, `gap_s` of silence, utterance B, 2 s of silence; 0.8 s before A; pink noise at 20 dB.
struct two_utterances {
  scene s;
  std::vector<float> x;
  two_utterances(const temp_dir& dir, double gap_s) {
    s.pause(0.8);
    s.say(speak16k(dir, "Let me look into that for you right now.", "en-us"));
    s.pause(gap_s);
    s.say(speak16k(dir, "Your order will arrive on Monday morning.", "en+f3"));
    s.pause(2.0);
    x = noisy(s, noise_kind::pink, 20, 17);
  }
};

}  // namespace

TEST_SUITE("vad") {
  TEST_CASE("endpointer: an utterance ends once the trailing silence has passed") {
    temp_dir dir;
    const two_utterances scene(dir, 1.2);
    REQUIRE(scene.s.truth.size() == 2);
    const auto& truth = scene.s.truth;

    SUBCASE("a pause shorter than the trailing silence stays inside the utterance") {
      config::endpoint_config cfg;
      cfg.trailing_silence_ms = 1500;
      const auto events = run_endpointer(scene.x, cfg, ten_ms);
      REQUIRE(events.size() == 2);
      CHECK(events[0].event.kind == endpoint_kind::utterance_start);
      CHECK(std::abs(events[0].event.sample - truth[0].start) <= boundary_tolerance);
      CHECK(events[1].event.kind == endpoint_kind::utterance_end);
      CHECK(events[1].event.reason == end_reason::trailing_silence);
      CHECK(std::abs(events[1].event.sample - truth[1].end) <= boundary_tolerance);
    }

    SUBCASE("a longer pause ends it, as soon as the trailing silence is complete") {
      config::endpoint_config cfg;
      cfg.trailing_silence_ms = 500;
      const auto events = run_endpointer(scene.x, cfg, ten_ms);
      REQUIRE(events.size() == 4);
      const int64_t trailing = seconds(cfg.trailing_silence_ms / 1000.0);
      for (std::size_t i = 0; i < 2; ++i) {
        const endpoint_event& start = events[2 * i].event;
        const timed_event& end = events[2 * i + 1];
        CHECK(start.kind == endpoint_kind::utterance_start);
        CHECK(end.event.kind == endpoint_kind::utterance_end);
        CHECK(end.event.reason == end_reason::trailing_silence);
        CHECK(std::abs(start.sample - truth[i].start) <= boundary_tolerance);
        CHECK(std::abs(end.event.sample - truth[i].end) <= boundary_tolerance);
        // Reported once the silence is known, and no later than the chunk that completes it.
        CHECK(end.fed >= end.event.sample + trailing);
        CHECK(end.fed <= end.event.sample + trailing + static_cast<int64_t>(3 * ten_ms));
      }
    }
  }

  TEST_CASE("endpointer: a long utterance is cut at its quietest recent point") {
    temp_dir dir;
    // About 12 s of speech with short pauses, which the VAD bridges into one region.
    const scene s = many_sentences(dir, 12.0, 0.15, 0.25, 3);
    REQUIRE(s.truth.size() >= 4);
    const std::vector<float> x = noisy(s, noise_kind::white, 20, 23);
    config::endpoint_config cfg;
    cfg.max_utterance_ms = 3000;
    cfg.cut_search_ms = 1500;
    const auto events = run_endpointer(x, cfg, 1000);
    REQUIRE(events.size() >= 6);

    auto analysis = analyze_speech(x, config::vad_config{});
    REQUIRE(analysis.has_value());
    std::vector<float> sorted;
    for (const vad_frame& f : analysis->frames)
      if (f.active) sorted.push_back(f.energy_db);
    REQUIRE_FALSE(sorted.empty());
    std::sort(sorted.begin(), sorted.end());
    const float median_speech_db = sorted[sorted.size() / 2];

    int forced = 0;
    int64_t open_start = -1;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const endpoint_event& e = events[i].event;
      if (e.kind == endpoint_kind::utterance_start) {
        CHECK(open_start < 0);
        open_start = e.sample;
        continue;
      }
      REQUIRE(open_start >= 0);
      CHECK(e.sample > open_start);
      CHECK(e.sample - open_start <= seconds(cfg.max_utterance_ms / 1000.0));
      if (e.reason == end_reason::max_length && i + 1 < events.size() &&
          events[i + 1].event.kind == endpoint_kind::utterance_start && events[i + 1].event.sample == e.sample) {
        ++forced;
        // The cut is in a quiet stretch, well below the typical speech frame: here, a pause
        // between two sentences.
        const auto frame = static_cast<std::size_t>(e.sample / vad_hop_samples);
        CHECK(analysis->frames[frame].energy_db < median_speech_db - 10.0f);
        bool in_pause = false;
        for (std::size_t j = 0; j + 1 < s.truth.size(); ++j)
          in_pause = in_pause || (s.truth[j].end - boundary_tolerance <= e.sample &&
                                  e.sample <= s.truth[j + 1].start + boundary_tolerance);
        INFO("cut at " << to_ms(e.sample) << " ms");
        CHECK(in_pause);
      }
      open_start = -1;
    }
    CHECK(forced >= 3);
    CHECK(open_start < 0);
  }

  TEST_CASE("endpointer: the stream's end closes an open utterance") {
    temp_dir dir;
    scene s;
    s.pause(0.5);
    s.say(speak16k(dir, "I have been waiting for over an hour.", "en"));
    REQUIRE(s.truth.size() == 1);
    const auto events = run_endpointer(s.clean, config::endpoint_config{}, 4000);
    REQUIRE(events.size() == 2);
    CHECK(events[1].event.kind == endpoint_kind::utterance_end);
    CHECK(events[1].event.reason == end_reason::end_of_stream);
    CHECK(events[1].event.sample == static_cast<int64_t>(s.clean.size()));
  }

  TEST_CASE("endpointer: results do not depend on chunking") {
    temp_dir dir;
    const two_utterances scene(dir, 0.9);
    config::endpoint_config cfg;
    cfg.trailing_silence_ms = 600;
    cfg.max_utterance_ms = 2000;
    cfg.cut_search_ms = 800;
    const auto whole = events_of(run_endpointer(scene.x, cfg, 0));
    CHECK(whole.size() >= 4);
    for (std::size_t chunk : {std::size_t{1}, std::size_t{160}, std::size_t{1234}}) {
      INFO("chunk " << chunk);
      CHECK(events_of(run_endpointer(scene.x, cfg, chunk)) == whole);
    }
  }

  TEST_CASE("endpointer: an invalid config is an error value") {
    config::endpoint_config cfg;
    cfg.cut_search_ms = cfg.max_utterance_ms;
    auto r = endpointer::create(config::vad_config{}, cfg);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_config);
    config::vad_config bad_vad;
    bad_vad.min_silence_ms = 10;
    CHECK_FALSE(endpointer::create(bad_vad, config::endpoint_config{}).has_value());
  }
}
