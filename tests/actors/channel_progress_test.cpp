// A channel's progress reports (actors/channel_progress.hpp) under CAF's deterministic test
// coordinator, where the test decides when the lane's batching window ends: what a lock-step
// client (Vosk's) is answered by. `caught_up` is false while a chunk the audio makes has no
// logits yet, and true once it has them, even though the rest of the audio (less than a chunk)
// is still pending; the partial of those logits reaches the subscriber before that report. And a
// report counts every audio message once the mailbox is empty, also when the message that
// followed the audio was not audio (the report timer).
#include "tests/actors/engine_test_util.hpp"

#include "tests/actors/deterministic_system.hpp"
#include "tests/actors/opening_subscriber.hpp"  // go_atom

#include "actors/supervisor_actor.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

// What the subscriber saw, in order: partials ('p'), finals ('f') and progress reports ('r').
struct seen_entry {
  char kind = 'r';
  uint64_t taken = 0;
  int64_t pending_ms = 0;
  bool caught_up = false;
  std::string text;
};

struct progress_log {
  std::vector<open_reply> opened;
  std::vector<seen_entry> seen;
};

caf::behavior recorder(caf::event_based_actor* self, supervisor_actor_type sup, std::shared_ptr<progress_log> out) {
  return {
      [=](test::go_atom) {
        self->request(sup, caf::infinite, open_atom::value, channel_request{}, caf::actor_cast<caf::actor>(self))
            .then([=](open_reply& r) { out->opened.push_back(std::move(r)); });
      },
      [=](transcript_event& ev) { out->seen.push_back({ev.is_final ? 'f' : 'p', 0, 0, false, ev.text}); },
      [=](progress_atom, uint64_t taken, int64_t pending_ms, bool caught_up) {
        out->seen.push_back({'r', taken, pending_ms, caught_up, {}});
      },
      [=](drained_atom, channel_id) {},
  };
}

// The index of the last report in `seen`, or -1.
int last_report(const std::vector<seen_entry>& seen) {
  for (int i = static_cast<int>(seen.size()) - 1; i >= 0; --i)
    if (seen[static_cast<std::size_t>(i)].kind == 'r') return i;
  return -1;
}

}  // namespace

TEST_SUITE("channel progress") {
  TEST_CASE("under the test coordinator: caught_up waits for the logits of every whole chunk, the partial comes first, and a report counts audio followed by a timer message") {
    auto cfg = test::base_config();
    cfg.engine.lanes = 1;
    auto res = test::resources(cfg);
    test::deterministic_system det;
    auto& sys = det.sys;
    auto& sched = det.sched;
    auto sup = sys.spawn(supervisor_actor, res, metrics_actor_type{}, 1, std::vector<double>{});
    auto out = std::make_shared<progress_log>();
    auto sub = sys.spawn(recorder, sup, out);
    caf::anon_send(sub, test::go_atom::value);
    sched.run();
    REQUIRE(out->opened.size() == 1);
    REQUIRE(out->opened[0].ok);
    const auto ch = out->opened[0].handle;

    caf::anon_send(ch, progress_atom::value);
    sched.run();
    REQUIRE(out->seen.size() == 1);
    CHECK(out->seen[0].taken == 0);
    CHECK(out->seen[0].caught_up);  // nothing taken, nothing to do

    // The call's caller channel from its start to 3.3 s: speech from about 0.5 s, so the audio
    // makes at least two whole 0.64 s chunks of the open utterance and leaves a partial one.
    const auto& speech = test::call_speech().channels[0];
    REQUIRE(speech.samples.size() > 53000);
    REQUIRE(!speech.regions.empty());
    REQUIRE(speech.regions[0].start_sample < 16000);
    REQUIRE(speech.regions[0].end_sample > 53000);  // still speaking at the cut
    caf::anon_send(ch, samples_atom::value, std::vector<float>(speech.samples.begin(), speech.samples.begin() + 53000));
    sched.run();  // the channel takes it and sends features; the lane's window has not ended
    int r = last_report(out->seen);
    REQUIRE(r > 0);
    CHECK(out->seen[static_cast<std::size_t>(r)].taken == 1);
    CHECK_FALSE(out->seen[static_cast<std::size_t>(r)].caught_up);
    const std::size_t before_steps = out->seen.size();

    // The lane's windows end (one timeout at a time) until the channel says it is caught up.
    for (int round = 0; round < 1000; ++round) {
      r = last_report(out->seen);
      if (out->seen[static_cast<std::size_t>(r)].caught_up) break;
      sched.trigger_timeout();
      sched.run();
    }
    r = last_report(out->seen);
    const auto& caught = out->seen[static_cast<std::size_t>(r)];
    REQUIRE(caught.caught_up);
    CHECK(caught.taken == 1);
    // Caught up is not "nothing pending": the part of a chunk after the last whole one waits for
    // more audio (53000 samples = 3.31 s; whole chunks end at multiples of 0.64 s after the
    // utterance's start).
    CHECK(caught.pending_ms > 0);
    MESSAGE("pending when caught up: ", caught.pending_ms, " ms");
    // The next chunk is made once 45 ms of audio after its end is there (stream_state.hpp), so
    // what waits for more audio is less than a chunk and that lookahead.
    CHECK(caught.pending_ms < 640 + 45);
    // The partial of the last logits reached the subscriber before the report that says so.
    bool partial_before = false;
    for (std::size_t i = before_steps; i < static_cast<std::size_t>(r); ++i)
      partial_before = partial_before || (out->seen[i].kind == 'p' && !out->seen[i].text.empty());
    CHECK(partial_before);

    // 20 ms of audio followed by the report timer's message: the audio's report is left out (the
    // mailbox is not empty after it, and 20 ms is under the 100 ms step), and is sent after the
    // timer's message, which leaves the mailbox empty.
    const std::size_t before_tail = out->seen.size();
    caf::anon_send(ch, samples_atom::value,
                   std::vector<float>(speech.samples.begin() + 53000, speech.samples.begin() + 53320));
    caf::anon_send(ch, report_atom::value);
    sched.run();
    bool counted = false;
    for (std::size_t i = before_tail; i < out->seen.size(); ++i)
      counted = counted || (out->seen[i].kind == 'r' && out->seen[i].taken == 2);
    CHECK(counted);

    caf::anon_send(ch, abort_atom::value);
    caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(sub, caf::exit_reason::user_shutdown);
    sched.run();
  }
}
