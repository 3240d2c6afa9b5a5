// Lanes ([engine] lanes > 0): each lane runs the dense layers and every expert of its channels'
// micro-batches on its own thread. The finals (text, word times) are the same for 1, 2 and 4
// lanes and equal the batcher-with-expert-actors engine's; new channels go to the least-loaded
// lane, so with as many channels as lanes every lane gets work.
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"

#include <map>
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

// Per utterance of one channel: its final (text and word times) or the error it was lost with.
struct utterance_outcome {
  std::map<int64_t, final_words> finals;
  std::map<int64_t, std::string> errors;
};

utterance_outcome outcome_of(const test::run_result& res, channel_id ch) {
  utterance_outcome o;
  if (auto it = res.finals.find(ch); it != res.finals.end())
    for (const auto& ev : it->second) {
      final_words w{ev.text, {}};
      for (const auto& x : ev.words) w.words.emplace_back(x.word, x.start_ms, x.end_ms);
      CHECK_MESSAGE(o.finals.emplace(ev.utterance, std::move(w)).second, "two finals for utterance " << ev.utterance);
    }
  if (auto it = res.errors.find(ch); it != res.errors.end())
    for (const auto& ev : it->second) CHECK(o.errors.emplace(ev.utterance, ev.error).second);
  return o;
}

// Two lanes, two channels (the first on lane 0, the second on lane 1): all of the second
// channel's audio and the first half of the first's, then (when `kill_lane0`) lane 0 is killed
// and, once the supervisor has restarted it, the rest of the first channel's audio.
struct two_lane_run {
  utterance_outcome first, second;
  std::size_t first_half = 0, first_total = 0;
  bool restarted = false;
};

two_lane_run run_two_lanes(bool kill_lane0) {
  auto cfg = test::base_config();
  cfg.engine.lanes = 2;
  auto e = engine::start(test::resources(cfg));
  caf::scoped_actor self{e->system()};
  std::vector<test::segment_audio> segs[2];
  for (auto& s : test::call_segments()) segs[s.channel].push_back(std::move(s));
  two_lane_run out;
  out.first_total = segs[0].size();
  out.first_half = segs[0].size() / 2;
  auto a = test::open_ok(*e, self), b = test::open_ok(*e, self);
  for (const auto& s : segs[1]) self->send(b.handle, segment_atom::value, s.samples, s.start_sample);
  for (std::size_t i = 0; i < out.first_half; ++i)
    self->send(a.handle, segment_atom::value, segs[0][i].samples, segs[0][i].start_sample);
  if (kill_lane0) {
    const caf::actor lane0 = test::handles(*e, self).batcher;  // the supervisor answers lane 0 as the batcher
    caf::anon_send_exit(lane0, caf::exit_reason::kill);
    // The supervisor tells the lane's channels about the new lane before it answers this
    // request, so the audio sent after it reaches the channel behind that message.
    out.restarted = test::poll_until([&] { return test::handles(*e, self).batcher != lane0; });
  }
  for (std::size_t i = out.first_half; i < segs[0].size(); ++i)
    self->send(a.handle, segment_atom::value, segs[0][i].samples, segs[0][i].start_sample);
  self->send(a.handle, end_atom::value);
  self->send(b.handle, end_atom::value);
  const auto res = test::collect(self, 2);
  REQUIRE_FALSE(res.timed_out);
  out.first = outcome_of(res, a.channel);
  out.second = outcome_of(res, b.channel);
  return out;
}

}  // namespace

TEST_SUITE("lanes") {
  TEST_CASE("a lane killed mid-call is restarted: its channel's utterances are exact or reported lost, the other lane's are exact") {
    const auto ref = run_two_lanes(false);
    REQUIRE(ref.first_total >= 4);
    REQUIRE(ref.first.errors.empty());
    REQUIRE(ref.second.errors.empty());
    REQUIRE(ref.first.finals.size() == ref.first_total);
    const auto got = run_two_lanes(true);
    REQUIRE(got.restarted);
    // The channel on the other lane: every final exact, nothing lost.
    CHECK(got.second.errors.empty());
    CHECK(got.second.finals == ref.second.finals);
    // The killed lane's channel: one outcome per utterance; a final is exact; only utterances
    // sent before the kill can be lost, and with the reason.
    for (std::size_t u = 0; u < got.first_total; ++u) {
      CAPTURE(u);
      const auto uid = static_cast<int64_t>(u);
      const bool final = got.first.finals.count(uid) == 1, lost = got.first.errors.count(uid) == 1;
      CHECK(final != lost);
      if (final) CHECK(got.first.finals.at(uid) == ref.first.finals.at(uid));
      if (lost) {
        CHECK(u < got.first_half);
        CHECK(got.first.errors.at(uid).find("lost") != std::string::npos);
      }
    }
    CHECK(got.first.finals.size() + got.first.errors.size() == got.first_total);
    MESSAGE("lost " << got.first.errors.size() << " of the " << got.first_half << " utterances sent before the kill");
    // Everything sent after the restart was recognized on the new lane 0.
    for (std::size_t u = got.first_half; u < got.first_total; ++u) CHECK(got.first.finals.count(static_cast<int64_t>(u)) == 1);
  }

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
