// The batcher (each lane) watches each channel once, however many utterances the channel sends
// it (issue 11, point 6: one monitor per utterance piled up on long calls), and forgets it when
// it goes. A channel's utterances are placed lane by lane, so each lane it used watches it once.
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"

#include <map>
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

// Per batcher-kind actor (the batcher, or each lane): counter `key` (0 until reported).
std::map<std::string, double> per_batcher(engine& e, const std::string& key) {
  std::map<std::string, double> out;
  const auto snap = nlohmann::json::parse(e.snapshot(), nullptr, false);
  if (snap.is_discarded()) return out;
  for (const auto& a : snap["actors"])
    if (a["kind"] == "batcher") out[a["name"]] = a["counters"].contains(key) ? a["counters"][key].get<double>() : 0;
  return out;
}

}  // namespace

TEST_SUITE("batcher monitors") {
  TEST_CASE("one channel with many utterances is monitored once by each lane that ran some") {
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
    const auto utterances = per_batcher(*e, "utterances"), monitors = per_batcher(*e, "monitors_placed");
    REQUIRE(!utterances.empty());
    for (const auto& [name, n] : utterances) {
      CAPTURE(name);
      CHECK(monitors.at(name) == (n > 0 ? 1 : 0));
    }
  }
}
