// A micro-batch given up while an expert still holds its token blocks (issue 11, point 6): the
// next step must not write into those blocks. Under the test coordinator a fake expert keeps
// every block it is sent and answers with an error instead of a reply (the batcher gives the half
// up); the probe then sends a second utterance, whose step sends new blocks. The first block's
// rows must be as the expert received them.
#include "tests/actors/engine_test_util.hpp"

#include "tests/actors/deterministic_system.hpp"

#include "actors/batcher_actor.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;

struct held_blocks {
  std::vector<block_msg> msgs;                // as received: they share the batcher's buffers
  std::vector<std::vector<float>> rows_then;  // copies of their rows when received
};

block_sink_actor::behavior_type keeping_expert(block_sink_actor::pointer, std::shared_ptr<held_blocks> held) {
  return {
      [held](block_atom, block_msg& m) -> caf::result<reply_msg> {
        held->rows_then.push_back(m.block->rows);
        held->msgs.push_back(m);
        return caf::make_error(caf::sec::runtime_error, "kept");  // no reply_msg: the request fails
      },
  };
}

caf::behavior probe(caf::event_based_actor* self, compute_actor_type batcher, std::vector<std::vector<float>> utts,
                    std::shared_ptr<std::vector<logits_chunk>> out) {
  return {
      [=](go_atom) { self->send(batcher, features_atom::value, feature_chunk{4, 0, utts[0], true}); },
      [=](logits_atom, logits_chunk& c) {
        if (c.utterance == 0 && !c.error.empty())
          self->send(batcher, features_atom::value, feature_chunk{4, 1, utts[1], true});
        out->push_back(std::move(c));
      },
  };
}

}  // namespace

TEST_SUITE("aborted step buffers") {
  TEST_CASE("blocks an expert still holds after the step was given up are not reused by the next step") {
    auto cfg = test::base_config();
    cfg.engine.report_ms = 1000;
    cfg.engine.expert_shards = 1;
    cfg.engine.overlap = false;
    auto res = test::resources(cfg);
    test::deterministic_system det;
    auto& sys = det.sys;
    auto& sched = det.sched;
    auto held = std::make_shared<held_blocks>();
    auto expert = sys.spawn(keeping_expert, held);
    auto batcher = sys.spawn(batcher_actor, res, metrics_actor_type{}, supervisor_actor_type{});
    caf::anon_send(batcher, shards_atom::value, std::vector<block_sink_actor>{expert}, std::vector<spillway_actor_type>{});
    const auto segs = test::call_segments();
    auto out = std::make_shared<std::vector<logits_chunk>>();
    auto p = sys.spawn(probe, batcher, std::vector<std::vector<float>>{res->fbank->compute(segs[0].samples),
                                                                       res->fbank->compute(segs[1].samples)},
                       out);
    caf::anon_send(p, go_atom::value);
    for (int round = 0; round < 1000 && held->msgs.size() < 2; ++round) {
      sched.run();
      if (held->msgs.size() < 2) sched.trigger_timeout();  // batch windows
    }
    caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(expert, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
    sched.run();
    REQUIRE(held->msgs.size() >= 2);  // one block of each utterance's step
    REQUIRE(out->size() >= 1);
    CHECK(out->front().utterance == 0);
    CHECK_FALSE(out->front().error.empty());  // the first step was given up
    CHECK(held->msgs[1].block.get() != held->msgs[0].block.get());
    CHECK(held->msgs[0].block->rows == held->rows_then[0]);
    CHECK(held->rows_then[1] != held->rows_then[0]);  // the second step's rows differ: a reuse would show
  }
}
