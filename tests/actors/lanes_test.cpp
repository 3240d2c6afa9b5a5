// Lanes ([engine] lanes > 0): each lane runs the dense layers and every expert of its channels'
// micro-batches on its own thread. The finals (text, word times) are the same for 1, 2 and 4
// lanes and equal the batcher-with-expert-actors engine's; new channels go to the least-loaded
// lane, so with as many channels as lanes every lane gets work.
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"

#include <thread>

#include <nlohmann/json.hpp>

using namespace sluice;
using namespace sluice::actors;

namespace {

constexpr int copies = 2;  // of the call: 4 channels

struct final_words {
  std::string text;
  std::vector<std::tuple<std::string, int64_t, int64_t>> words;  // word, start_ms, end_ms
  bool operator==(const final_words&) const = default;
};

// Finals per opened channel (in opening order), each channel's in utterance order.
std::vector<std::vector<final_words>> run(int lanes, std::unique_ptr<engine>* keep = nullptr) {
  auto cfg = test::base_config();
  cfg.engine.lanes = lanes;
  auto e = engine::start(test::resources(cfg));
  caf::scoped_actor self{e->system()};
  const auto segs = test::call_segments();
  std::vector<open_reply> chans;
  for (int c = 0; c < 2 * copies; ++c) chans.push_back(test::open_ok(*e, self));
  for (int c = 0; c < 2 * copies; ++c)
    for (const auto& s : segs)
      if (s.channel == c % 2) self->send(chans[static_cast<std::size_t>(c)].handle, segment_atom::value, s.samples, s.start_sample);
  for (auto& r : chans) self->send(r.handle, end_atom::value);
  auto res = test::collect(self, chans.size());
  REQUIRE_FALSE(res.timed_out);
  std::vector<std::vector<final_words>> out;
  for (auto& r : chans) {
    CHECK(res.errors[r.channel].empty());
    std::vector<final_words> f;
    for (const auto& ev : res.finals[r.channel]) {
      final_words w{ev.text, {}};
      for (const auto& x : ev.words) w.words.emplace_back(x.word, x.start_ms, x.end_ms);
      f.push_back(std::move(w));
    }
    out.push_back(std::move(f));
  }
  if (keep) *keep = std::move(e);
  return out;
}

// The counter `key` of actor `name` from the metrics snapshot, polled until it is > 0 (reports
// come every report_ms) or 20 s pass; 0 then.
double counter_of(engine& e, const std::string& name, const std::string& key) {
  double value = 0;
  test::poll_until(
      [&] {
        const auto snap = nlohmann::json::parse(e.snapshot(), nullptr, false);
        if (!snap.is_discarded())
          for (const auto& a : snap["actors"])
            if (a["name"] == name && a["counters"].contains(key) && a["counters"][key].get<double>() > 0)
              value = a["counters"][key].get<double>();
        return value > 0;
      },
      std::chrono::seconds(20));
  return value;
}

}  // namespace

TEST_SUITE("lanes") {
  TEST_CASE("finals are identical for 1, 2 and 4 lanes and equal the batcher engine's") {
    const auto batcher = run(0);
    std::size_t words = 0;
    for (const auto& ch : batcher)
      for (const auto& f : ch) words += f.words.size();
    REQUIRE(batcher.size() == 2 * copies);
    CHECK(words >= 10);  // real speech: texts and times to compare
    for (int lanes : {1, 2, 4}) {
      CAPTURE(lanes);
      std::unique_ptr<engine> e;
      const auto got = run(lanes, &e);
      CHECK(got == batcher);
      // Least-loaded placement: 4 channels over `lanes` lanes, every lane served some.
      for (int i = 0; i < lanes; ++i) {
        CAPTURE(i);
        CHECK(counter_of(*e, "lane/" + std::to_string(i), "utterances") > 0);
      }
    }
  }

  TEST_CASE("lanes = -1 runs as many lanes as the placement plan chose, with the same finals") {
    const auto batcher = run(0);
    std::unique_ptr<engine> e;
    const auto got = run(-1, &e);
    CHECK(e->placement().n_lanes() >= 1);
    CHECK(e->lanes() == e->placement().n_lanes());
    CHECK(got == batcher);
    // The lanes ran the work (lane 0 takes the first channel).
    CHECK(counter_of(*e, "lane/0", "utterances") > 0);
  }
}
