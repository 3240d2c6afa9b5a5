// The batcher watches each channel once, however many utterances the channel sends (issue 11,
// point 6: one monitor per utterance piled up on long calls), and forgets it when it goes.
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"

#include <thread>

#include <nlohmann/json.hpp>

using namespace sluice;
using namespace sluice::actors;

namespace {

// The batchers' summed counter `key` (0 until reported), from the metrics snapshot.
double batcher_counter(engine& e, const std::string& key) {
  const auto snap = nlohmann::json::parse(e.snapshot(), nullptr, false);
  if (snap.is_discarded() || !snap.contains("kinds") || !snap["kinds"].contains("batcher")) return 0;
  const auto& c = snap["kinds"]["batcher"]["counters"];
  return c.contains(key) ? c[key].get<double>() : 0;
}

}  // namespace

TEST_SUITE("batcher monitors") {
  TEST_CASE("one channel with many utterances is monitored once") {
    auto e = engine::start(test::resources(test::base_config()));
    caf::scoped_actor self{e->system()};
    const auto segs = test::call_segments();
    auto ch = test::open_ok(*e, self);
    std::size_t sent = 0;
    for (const auto& s : segs)
      if (s.channel == 0) {
        self->send(ch.handle, segment_atom::value, s.samples, s.start_sample);
        ++sent;
      }
    REQUIRE(sent >= 3);
    self->send(ch.handle, end_atom::value);
    auto run = test::collect(self, 1);
    REQUIRE_FALSE(run.timed_out);
    REQUIRE(run.finals[ch.channel].size() == sent);
    // Every utterance has reached the batcher and been counted once its report is in.
    REQUIRE(test::poll_until([&] { return batcher_counter(*e, "utterances") >= static_cast<double>(sent); }, std::chrono::seconds(20)));
    CHECK(batcher_counter(*e, "utterances") == static_cast<double>(sent));
    CHECK(batcher_counter(*e, "monitors_placed") == 1);
  }
}
