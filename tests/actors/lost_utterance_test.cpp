// An utterance that cannot be run is reported, never left hanging (issue 11, point 6): a failed
// model-state creation in the batcher and a failed decoder creation in the channel each send the
// utterance's error to whoever waits for it.
#include "tests/actors/engine_test_util.hpp"

#include "tests/actors/deterministic_system.hpp"

#include "actors/batcher_actor.hpp"
#include "actors/channel_actor.hpp"
#include "actors/channel_pipeline.hpp"
#include "actors/system_config.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;

caf::behavior probe(caf::event_based_actor* self, compute_actor_type batcher, std::vector<float> frames,
                    std::shared_ptr<std::vector<logits_chunk>> out) {
  return {
      [=](go_atom) { self->send(batcher, features_atom::value, feature_chunk{3, 0, frames, true}); },
      [=](logits_atom, logits_chunk& c) { out->push_back(std::move(c)); },
  };
}

// A batcher stand-in: once both utterances of a channel have sent their last features, it fails
// utterance 1 first and only then ends utterance 0 (with no logits: an empty final).
caf::behavior failing_batcher(caf::event_based_actor* self) {
  self->set_default_handler(caf::drop);
  auto lasts = std::make_shared<int>(0);
  return {
      [=](features_atom, feature_chunk& c) {
        if (!c.last || ++*lasts < 2) return;
        auto channel = caf::actor_cast<caf::actor>(self->current_sender());
        logits_chunk failed;
        failed.channel = c.channel;
        failed.utterance = 1;
        failed.last = true;
        failed.error = "the step failed (test)";
        self->send(channel, logits_atom::value, failed);
        logits_chunk ended;
        ended.channel = c.channel;
        ended.utterance = 0;
        ended.last = true;
        self->send(channel, logits_atom::value, ended);
      },
  };
}

}  // namespace

TEST_SUITE("lost utterances") {
  TEST_CASE("a lost utterance's error is its final and waits for the final of an earlier utterance: finals stay in utterance order") {
    auto cfg = test::base_config();
    auto res = test::resources(cfg);
    auto pipe = channel_pipeline::create(*res, channel_request{});
    REQUIRE(pipe.has_value());
    engine_system_config sys_cfg;
    caf::actor_system sys{sys_cfg};
    caf::scoped_actor self{sys};
    auto batcher = sys.spawn(failing_batcher);
    auto ch = sys.spawn(channel_actor, res, channel_id{7}, std::make_shared<channel_pipeline>(std::move(*pipe)), true,
                        std::string{}, caf::actor_cast<caf::actor>(self), lane_set::of(caf::actor_cast<compute_actor_type>(batcher)), metrics_actor_type{},
                        supervisor_actor_type{});
    const auto segs = test::call_segments();
    REQUIRE(segs.size() >= 2);
    self->send(ch, segment_atom::value, segs[0].samples, segs[0].start_sample);
    self->send(ch, segment_atom::value, segs[1].samples, segs[1].start_sample);
    self->send(ch, end_atom::value);
    // Every final (text or error) in the order the subscriber gets them, until the channel drains.
    std::vector<transcript_event> finals;
    bool drained = false, timed_out = false;
    while (!drained && !timed_out)
      self->receive(
          [&](transcript_event& ev) {
            if (ev.is_final) finals.push_back(std::move(ev));
          },
          [&](drained_atom, channel_id) { drained = true; },
          caf::after(std::chrono::seconds(30)) >> [&] { timed_out = true; });
    caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
    REQUIRE_FALSE(timed_out);
    REQUIRE(finals.size() == 2);
    CHECK(finals[0].utterance == 0);
    CHECK(finals[0].error.empty());
    CHECK(finals[1].utterance == 1);
    CHECK(finals[1].error == "the step failed (test)");
  }

  TEST_CASE("the batcher reports an utterance whose model state cannot be created, at once") {
    auto cfg = test::base_config();
    cfg.engine.report_ms = 1000;
    auto good = test::resources(cfg);
    auto doctored = std::make_shared<engine_resources>(*good);
    doctored->window = moe::attention_window{good->window.chunk_frames, -2};  // left_chunks < -1: refused
    test::deterministic_system det;
    auto& sys = det.sys;
    auto& sched = det.sched;
    auto batcher = sys.spawn(batcher_actor, std::shared_ptr<const engine_resources>(doctored), metrics_actor_type{}, supervisor_actor_type{});
    const auto segs = test::call_segments();
    auto out = std::make_shared<std::vector<logits_chunk>>();
    auto p = sys.spawn(probe, batcher, good->fbank->compute(segs[0].samples), out);
    caf::anon_send(p, go_atom::value);
    sched.run();  // no timer fires: the answer may not wait for a batch window
    // Stop both before checking, so that a failed check does not leave the system waiting.
    caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
    sched.run();
    REQUIRE(out->size() == 1);
    CHECK(out->front().channel == 3);
    CHECK(out->front().utterance == 0);
    CHECK(out->front().last);
    CHECK(out->front().error.find("cannot create the model state") != std::string::npos);
  }

  TEST_CASE("the channel reports an utterance whose decoder cannot be created, and still drains") {
    auto cfg = test::base_config();
    auto res = test::resources(cfg);
    auto pipe = channel_pipeline::create(*res, channel_request{});
    REQUIRE(pipe.has_value());
    auto bad = std::make_shared<moe::prepared_stream>(*pipe->stream);
    bad->decoder.beam_size = 0;  // refused by every decoder's create()
    bad->decoder.lexicon_beam_size = 0;
    pipe->stream = bad;
    engine_system_config sys_cfg;
    caf::actor_system sys{sys_cfg};
    caf::scoped_actor self{sys};
    // No batcher: the utterance must not get as far as sending features.
    auto ch = sys.spawn(channel_actor, res, channel_id{5}, std::make_shared<channel_pipeline>(std::move(*pipe)), true,
                        std::string{}, caf::actor_cast<caf::actor>(self), lane_set::of(compute_actor_type{}), metrics_actor_type{},
                        supervisor_actor_type{});
    const auto segs = test::call_segments();
    self->send(ch, segment_atom::value, segs[0].samples, segs[0].start_sample);
    self->send(ch, end_atom::value);
    auto got = test::collect(self, 1, std::chrono::seconds(30));
    REQUIRE_FALSE(got.timed_out);
    CHECK(got.finals[5].empty());
    REQUIRE(got.errors[5].size() == 1);
    CHECK(got.errors[5].front().utterance == 0);
    CHECK(got.errors[5].front().is_final);
    CHECK(got.errors[5].front().error.find("cannot create the decoder") != std::string::npos);
  }
}
