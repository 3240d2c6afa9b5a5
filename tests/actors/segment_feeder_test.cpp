// feed_segments: a file channel sliced while it is recognised gets what the whole-file slicing
// gives it.
#include "actors/segment_feeder.hpp"
#include "dsp/slicer.hpp"
#include "tests/actors/engine_test_util.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

using finals = std::vector<std::tuple<std::string, int64_t, int64_t, std::vector<std::tuple<std::string, int64_t, int64_t>>>>;

finals finals_of(const test::run_result& res, channel_id ch) {
  finals f;
  if (auto it = res.finals.find(ch); it != res.finals.end())
    for (const auto& ev : it->second) {
      std::vector<std::tuple<std::string, int64_t, int64_t>> words;
      for (const auto& w : ev.words) words.emplace_back(w.word, w.start_ms, w.end_ms);
      f.emplace_back(ev.text, ev.start_ms, ev.end_ms, std::move(words));
    }
  return f;
}

}  // namespace

TEST_SUITE("engine") {
  TEST_CASE("feed_segments: each channel of the call, sliced while it is recognised, gets the finals of its whole-file slicing") {
    auto cfg = test::base_config();
    // Short segments: many of them, so the feeder sends while the channel is busy.
    cfg.segment.min_s = 1.0;
    cfg.segment.max_s = 2.5;
    auto e = engine::start(test::resources(cfg));
    caf::scoped_actor self{e->system()};
    const auto& speech = test::call_speech();  // 16 kHz samples of both channels
    REQUIRE(speech.channels.size() == 2);
    channel_request req;
    req.offline = true;
    req.partials = false;
    for (std::size_t ch = 0; ch < 2; ++ch) {
      CAPTURE(ch);
      const auto& x = speech.channels[ch].samples;
      auto whole = dsp::slice(x, cfg.vad, cfg.segment);
      REQUIRE(whole.has_value());
      REQUIRE(whole->size() >= 3);
      auto by_hand = test::open_ok(*e, self, req);
      for (const auto& s : *whole)
        self->send(by_hand.handle, segment_atom::value, std::vector<float>(x.begin() + s.start_sample, x.begin() + s.end_sample),
                   s.start_sample);
      self->send(by_hand.handle, end_atom::value);
      auto fed = test::open_ok(*e, self, req);
      auto feeder = feed_segments(e->system(), fed.handle, x, cfg.vad, cfg.segment, 0);
      REQUIRE(feeder.has_value());
      auto res = test::collect(self, 2);
      REQUIRE_FALSE(res.timed_out);
      CHECK(res.errors.empty());
      const auto want = finals_of(res, by_hand.channel);
      CHECK(want.size() == whole->size());
      CHECK(finals_of(res, fed.channel) == want);
    }
  }

  TEST_CASE("feed_segments: an engine drained while a file is still being sliced finishes the whole file first") {
    // Speech, ten minutes of silence, speech: the first utterance's final comes back while the
    // feeder is still working through the silence, so a file channel that took the drain's end
    // as its own would drain there and never see the second speech.
    auto cfg = test::base_config();
    auto e = engine::start(test::resources(cfg));
    caf::scoped_actor self{e->system()};
    const auto& x = test::call_speech().channels[0].samples;
    std::vector<float> file(x);
    file.resize(file.size() + 600 * 16000, 0.0f);
    file.insert(file.end(), x.begin(), x.end());
    auto whole = dsp::slice(file, cfg.vad, cfg.segment);
    REQUIRE(whole.has_value());
    const int64_t second_speech_ms = static_cast<int64_t>(x.size() + 600 * 16000) / 16;
    REQUIRE(whole->back().start_sample / 16 >= second_speech_ms - 1000);
    channel_request req;
    req.offline = true;
    req.partials = false;
    auto fed = test::open_ok(*e, self, req);
    REQUIRE(feed_segments(e->system(), fed.handle, file, cfg.vad, cfg.segment, 0).has_value());
    CHECK(e->shutdown(std::chrono::seconds(300)));
    auto res = test::collect(self, 1);
    REQUIRE_FALSE(res.timed_out);
    CHECK(res.errors.empty());
    const auto got = finals_of(res, fed.channel);
    CHECK(got.size() == whole->size());
    REQUIRE_FALSE(got.empty());
    CHECK(std::get<1>(got.back()) >= second_speech_ms - 1000);
  }

  TEST_CASE("feed_segments: an invalid segment section is an error and nothing is spawned") {
    auto e = engine::start(test::resources(test::base_config()));
    caf::scoped_actor self{e->system()};
    config::segment_config bad;
    bad.min_s = 30;  // not below max_s
    auto r = feed_segments(e->system(), caf::actor_cast<channel_actor_type>(self), std::vector<float>(16000, 0.0f),
                           config::vad_config{}, bad, 0);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_config);
  }
}

TEST_SUITE("engine") {
  TEST_CASE("feed_segments: a feeder whose channel has terminated stops and sends nothing, one whose channel lives feeds it all") {
    caf::actor_system_config sys_cfg;
    caf::actor_system sys{sys_cfg};
    caf::scoped_actor self{sys};
    const auto cfg = test::base_config();
    const auto& x = test::call_speech().channels[0].samples;
    auto whole = dsp::slice(x, cfg.vad, cfg.segment);
    REQUIRE(whole.has_value());
    REQUIRE(whole->size() >= 2);

    auto exit_of = [&](const caf::actor& feeder) {
      self->monitor(feeder);
      caf::error reason;
      self->receive([&](caf::down_msg& dm) { reason = dm.reason; });
      return reason;
    };

    // Alive: the test's own actor stands in for the channel and gets every segment, then the end.
    auto live = feed_segments(sys, caf::actor_cast<channel_actor_type>(self), x, cfg.vad, cfg.segment, 0);
    REQUIRE(live.has_value());
    std::size_t segments = 0;
    bool ended = false;
    while (!ended)
      self->receive([&](segment_atom, const std::vector<float>&, int64_t) { ++segments; },
                    [&](end_atom) { ended = true; });
    CHECK(segments == whole->size());
    CHECK(exit_of(*live) == caf::exit_reason::normal);

    // Gone: a channel stand-in that has terminated before the feeder starts. Its mailbox is
    // closed, so what reached it is unknowable from here; the feeder's own exit reason says
    // whether it stopped or went through the whole file.
    auto gone = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
      return {[](segment_atom, const std::vector<float>&, int64_t) {}, [](end_atom) {}};
    });
    self->monitor(gone);
    self->send_exit(gone, caf::exit_reason::kill);
    self->receive([&](caf::down_msg&) {});
    auto stopped = feed_segments(sys, caf::actor_cast<channel_actor_type>(gone), x, cfg.vad, cfg.segment, 0);
    REQUIRE(stopped.has_value());
    CHECK(exit_of(*stopped) == caf::exit_reason::user_shutdown);
  }
}
