// The live path's audio history (kept so a late-reported utterance start can still be fed) drops
// its front in batches: over a stream each sample is moved about once, not the whole 3 s history
// on every 20 ms packet (issue 11, point 6).
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"

#include <thread>

#include <nlohmann/json.hpp>

using namespace sluice;
using namespace sluice::actors;

namespace {

constexpr int packet_samples = 320;  // 20 ms at 16 kHz
constexpr int packets = 500;         // 10 s

double channel_counter(engine& e, const std::string& key) {
  const auto snap = nlohmann::json::parse(e.snapshot(), nullptr, false);
  if (snap.is_discarded() || !snap.contains("kinds") || !snap["kinds"].contains("channel")) return -1;
  const auto& c = snap["kinds"]["channel"]["counters"];
  return c.contains(key) ? c[key].get<double>() : 0;
}

}  // namespace

TEST_SUITE("channel history") {
  TEST_CASE("10 s of 20 ms packets move at most as many history samples as arrived") {
    auto e = engine::start(test::resources(test::base_config()));
    caf::scoped_actor self{e->system()};
    auto ch = test::open_ok(*e, self);  // f32 samples at 16 kHz
    const std::vector<float> silence(packet_samples, 0.0f);
    for (int i = 0; i < packets; ++i) self->send(ch.handle, samples_atom::value, silence);
    self->send(ch.handle, end_atom::value);
    auto run = test::collect(self, 1);
    REQUIRE_FALSE(run.timed_out);
    // The channel's last report (sent as it stops) carries all its counts; poll until it is in.
    const double audio_ms = static_cast<double>(packets) * packet_samples / (dsp::model_sample_rate / 1000);
    test::poll_until([&] { return channel_counter(*e, "audio_ms") >= audio_ms; }, std::chrono::seconds(20));
    REQUIRE(channel_counter(*e, "audio_ms") == audio_ms);
    const double moved = channel_counter(*e, "history_moved_samples");
    CHECK(moved > 0);  // the front was dropped (10 s of audio, 3 s kept)
    CHECK(moved <= static_cast<double>(packets) * packet_samples);
  }
}
