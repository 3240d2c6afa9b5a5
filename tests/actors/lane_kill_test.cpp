// A lane killed mid-utterance, under CAF's deterministic test coordinator (every message is run
// in an order the test fixes): the supervisor with two lanes, a probe subscriber with two
// channels whose first utterances are placed one per lane (least outstanding work). Lane 0 is
// killed while it holds the first channel's features of utterance 0 in its batching window,
// before any step. That utterance is reported lost, with the reason, as its final; the same
// channel's next utterance, sent after the restart, and the other channel (its utterance on lane
// 1) get exactly the single-threaded text; both channels drain.
#include "tests/actors/engine_test_util.hpp"

#include "tests/actors/deterministic_system.hpp"
#include "tests/actors/opening_subscriber.hpp"

#include "actors/batcher_actor.hpp"
#include "actors/supervisor_actor.hpp"

using namespace sluice;
using namespace sluice::actors;

TEST_SUITE("lane kill") {
  TEST_CASE("under the test coordinator, a lane killed while it holds an utterance: that one is reported lost, the rest exact") {
    auto cfg = test::base_config();
    cfg.engine.lanes = 2;
    cfg.engine.offline_gather = true;  // segments wait in the window, so lane 0 holds one when killed
    cfg.engine.report_ms = 60000;
    auto res = test::resources(cfg);
    test::deterministic_system det;
    auto& sys = det.sys;
    auto& sched = det.sched;

    std::vector<test::segment_audio> segs[2];
    for (auto& s : test::call_segments()) segs[s.channel].push_back(std::move(s));
    REQUIRE(segs[0].size() >= 2);
    REQUIRE(segs[1].size() >= 1);

    auto sup = sys.spawn(supervisor_actor, res, metrics_actor_type{}, 2, std::vector<double>{});
    auto out = std::make_shared<test::subscriber_log>();
    auto p = sys.spawn(test::opening_subscriber, sup, 2, out);
    caf::anon_send(p, test::go_atom::value);
    sched.run();
    REQUIRE(out->opened.size() == 2);
    for (const auto& r : out->opened) REQUIRE(r.ok);
    // Utterances are placed on the least-loaded lane as they start: a's (first) on lane 0, b's on lane 1.
    const auto a = out->opened[0], b = out->opened[1];

    // Lane 0 and lane 1 by the supervisor's word (it answers lane 0 as the batcher).
    caf::actor lane0;
    {
      auto asker = sys.spawn([&lane0, sup](caf::event_based_actor* self) {
        self->request(sup, caf::infinite, shards_atom::value)
            .then([&lane0](std::vector<expert_actor_type>&, std::vector<spillway_actor_type>&, caf::actor& l) {
              lane0 = l;
            });
      });
      sched.run();
      REQUIRE(lane0);
    }

    // Utterance 0 of each channel; no timeout is triggered, so the lanes only gather.
    caf::anon_send(a.handle, segment_atom::value, segs[0][0].samples, segs[0][0].start_sample);
    caf::anon_send(b.handle, segment_atom::value, segs[1][0].samples, segs[1][0].start_sample);
    sched.run();
    CHECK(out->finals.empty());  // nothing was stepped yet

    caf::anon_send_exit(lane0, caf::exit_reason::kill);
    sched.run();  // lane 0 dies; the supervisor restarts it and tells both channels; a loses its utterance
    REQUIRE(out->finals.count(a.channel) == 1);
    REQUIRE(out->finals[a.channel].size() == 1);
    const auto& lost = out->finals[a.channel][0];
    CHECK(lost.utterance == 0);
    CHECK(lost.error.find("lost") != std::string::npos);
    CHECK(out->finals.count(b.channel) == 0);  // the other lane's utterance is untouched, still gathering

    // Utterance 1 of channel a goes to the new lane 0; both channels end.
    caf::anon_send(a.handle, segment_atom::value, segs[0][1].samples, segs[0][1].start_sample);
    caf::anon_send(a.handle, end_atom::value);
    caf::anon_send(b.handle, end_atom::value);
    for (int round = 0; round < 100000 && out->drained.size() < 2; ++round) {
      sched.run();
      if (out->drained.size() < 2) sched.trigger_timeout();  // the batching windows
    }
    REQUIRE(out->drained.size() == 2);

    REQUIRE(out->finals[a.channel].size() == 2);
    const auto& a1 = out->finals[a.channel][1];
    CHECK(a1.utterance == 1);
    CHECK(a1.error.empty());
    CHECK(a1.text == test::reference_text(*res, segs[0][1].samples));
    REQUIRE(out->finals[b.channel].size() == 1);
    CHECK(out->finals[b.channel][0].error.empty());
    CHECK(out->finals[b.channel][0].text == test::reference_text(*res, segs[1][0].samples));

    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
    sched.run();
  }
}
