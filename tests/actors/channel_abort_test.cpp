// abort_atom: a channel whose subscriber is gone stops at once instead of transcribing the
// audio it holds; the engine forgets it and the next channel gets the exact text.
#include "tests/actors/engine_test_util.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

// What reached `self` until the monitored channel went down (or `limit` passed: a failure).
struct until_down {
  std::size_t finals = 0;
  bool drained = false;
};

until_down wait_down(caf::scoped_actor& self, std::chrono::seconds limit, const char* why_not) {
  until_down out;
  bool down = false;
  while (!down)
    self->receive([&](transcript_event& ev) { out.finals += ev.is_final; },
                  [&](caf::down_msg& dm) {
                    down = true;
                    CHECK_MESSAGE(!dm.reason, self->system().render(dm.reason));
                  },
                  [&](drained_atom, channel_id) { out.drained = true; },
                  caf::after(limit) >> [&] {
                    down = true;
                    FAIL(why_not);
                  });
  return out;
}

}  // namespace

TEST_SUITE("engine") {
  TEST_CASE("abort: the channel exits normally without finishing its audio or sending drained, the engine goes on") {
    auto cfg = test::base_config();
    cfg.engine.max_channels = 1;
    auto e = engine::start(test::resources(cfg));
    caf::scoped_actor self{e->system()};
    const auto segments = test::call_segments();
    REQUIRE(segments.size() >= 2);
    auto a = test::open_ok(*e, self);
    self->monitor(a.handle);
    // Work that would take a while: every segment of the call, three times over.
    constexpr int copies = 3;
    for (int k = 0; k < copies; ++k)
      for (const auto& s : segments) self->send(a.handle, segment_atom::value, s.samples, s.start_sample);
    self->send(a.handle, abort_atom::value);
    const auto [finals, drained] = wait_down(self, std::chrono::seconds(30), "the aborted channel did not exit");
    CHECK_FALSE(drained);
    // The abort was in its mailbox before any logits could come back from the batcher (CAF
    // mailboxes are FIFO), so not one utterance was finished.
    CHECK(finals == 0);
    // The slot frees up (max_channels = 1) and the next channel is exact: the batcher dropped
    // the aborted channel's streams cleanly. The supervisor learns of the exit through its own
    // monitor, so the slot may take a moment: ask until it is granted.
    open_reply b;
    for (int attempt = 0; attempt < 1000 && !b.ok; ++attempt) b = e->open({}, caf::actor_cast<caf::actor>(self));
    REQUIRE_MESSAGE(b.ok, b.reason);
    self->send(b.handle, segment_atom::value, segments[0].samples, segments[0].start_sample);
    self->send(b.handle, end_atom::value);
    auto res = test::collect(self, 1);
    REQUIRE_FALSE(res.timed_out);
    REQUIRE(res.finals[b.channel].size() == 1);
    CHECK(res.finals[b.channel][0].text == test::reference_text(*test::resources(cfg), segments[0].samples));
  }
}

TEST_SUITE("engine") {
  TEST_CASE("drain timeout: channels still busy are aborted at high priority, so the engine can stop") {
    auto cfg = test::base_config();
    auto e = engine::start(test::resources(cfg));
    caf::scoped_actor self{e->system()};
    const auto segments = test::call_segments();
    REQUIRE(!segments.empty());
    auto a = test::open_ok(*e, self);
    self->monitor(a.handle);
    // A backlog like a client that sent far faster than real time: the call many times over,
    // minutes of compute on any machine, all queued before the drain starts.
    constexpr int copies = 60;
    for (int k = 0; k < copies; ++k)
      for (const auto& s : segments) self->send(a.handle, segment_atom::value, s.samples, s.start_sample);
    const std::size_t queued = copies * segments.size();
    CHECK_FALSE(e->shutdown(std::chrono::milliseconds(100)));
    const auto [finals, drained] =
        wait_down(self, std::chrono::seconds(60), "the channel was not stopped after the drain timed out");
    // Without the abort the drain's end_atom would have let the channel finish every queued
    // utterance (and report drained) before it exited.
    CHECK_FALSE(drained);
    CHECK(finals < queued);
    MESSAGE(finals << " of " << queued << " utterances finished before the abort");
  }
}
