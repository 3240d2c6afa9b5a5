// The batcher under CAF's deterministic test coordinator: a probe channel sends two
// utterances' features (one in three pieces); every message is run in a fixed order. Each
// utterance's logits come back in order, contiguous from frame 0, with exactly one `last` at
// the end, and together equal the offline forward.
#include "tests/actors/engine_test_util.hpp"

#include "tests/actors/deterministic_system.hpp"

#include <cmath>

#include "actors/batcher_actor.hpp"
#include "actors/expert_actor.hpp"
#include "actors/spillway_actor.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;

struct received {
  std::map<int64_t, std::vector<logits_chunk>> by_utterance;
};

caf::behavior probe_channel(caf::event_based_actor* self, compute_actor_type batcher, std::vector<std::vector<float>> utts,
                            int64_t n_mels, std::shared_ptr<received> out) {
  return {
      [=](go_atom) {
        // Utterance 0 in three pieces (not on chunk boundaries), utterance 1 whole.
        const auto& a = utts[0];
        const auto n = static_cast<int64_t>(a.size()) / n_mels;
        const int64_t cuts[] = {0, 100, 250, n};
        for (int i = 0; i < 3; ++i)
          self->send(batcher, features_atom::value,
                     feature_chunk{9, 0, std::vector<float>(a.begin() + cuts[i] * n_mels, a.begin() + cuts[i + 1] * n_mels),
                                   i == 2});
        self->send(batcher, features_atom::value, feature_chunk{9, 1, utts[1], true});
      },
      [=](logits_atom, logits_chunk& c) { out->by_utterance[c.utterance].push_back(std::move(c)); },
  };
}

}  // namespace

TEST_SUITE("batcher_order") {
  TEST_CASE("under the test coordinator, each utterance's logits arrive in order, complete, once, equal to offline") {
    auto cfg = test::base_config();
    cfg.engine.report_ms = 1000;
    cfg.engine.max_chunks_per_step = 2;
    auto res = test::resources(cfg);
    test::deterministic_system det;
    auto& sys = det.sys;
    auto& sched = det.sched;

    std::vector<block_sink_actor> experts;
    for (int32_t s = 0; s < res->placement.n_shards(); ++s) experts.push_back(sys.spawn(expert_actor, res, s, metrics_actor_type{}));
    std::vector<spillway_actor_type> spill{sys.spawn(spillway_actor, res, 0, metrics_actor_type{})};
    auto batcher = sys.spawn(batcher_actor, res, metrics_actor_type{}, supervisor_actor_type{});
    caf::anon_send(batcher, shards_atom::value, experts, spill);

    const auto segs = test::call_segments();
    std::vector<std::vector<float>> feats = {res->fbank->compute(segs[0].samples), res->fbank->compute(segs[1].samples)};
    const auto n_mels = static_cast<int64_t>(res->fbank->num_mels());
    auto out = std::make_shared<received>();
    auto probe = sys.spawn(probe_channel, batcher, feats, n_mels, out);
    caf::anon_send(probe, go_atom::value);

    auto complete = [&] {
      for (int64_t u = 0; u < 2; ++u) {
        auto it = out->by_utterance.find(u);
        if (it == out->by_utterance.end() || it->second.empty() || !it->second.back().last) return false;
      }
      return true;
    };
    for (int round = 0; round < 10000 && !complete(); ++round) {
      sched.run();
      if (!complete()) sched.trigger_timeout();  // the batch window (and report ticks)
    }
    REQUIRE(complete());
    for (int64_t u = 0; u < 2; ++u) {
      CAPTURE(u);
      const auto& chunks = out->by_utterance[u];
      const auto vocab = chunks.front().vocab;
      int64_t next = 0;
      std::vector<float> all;
      for (std::size_t i = 0; i < chunks.size(); ++i) {
        CHECK(chunks[i].error.empty());
        CHECK(chunks[i].first_frame == next);
        CHECK(chunks[i].last == (i + 1 == chunks.size()));
        next += static_cast<int64_t>(chunks[i].logits.size()) / vocab;
        all.insert(all.end(), chunks[i].logits.begin(), chunks[i].logits.end());
      }
      auto fwd = moe::forward_offline(*res->model, feats[static_cast<std::size_t>(u)].data(),
                                      static_cast<int64_t>(feats[static_cast<std::size_t>(u)].size()) / n_mels);
      REQUIRE(fwd.has_value());
      REQUIRE(all.size() == fwd->logits.size());
      double worst = 0;
      for (std::size_t i = 0; i < all.size(); ++i) worst = std::max(worst, std::fabs(double(all[i]) - fwd->logits[i]));
      CHECK(worst < 1e-3);
      // Two attention chunks (2 x 16 frames) per step at most.
      for (const auto& c : chunks) CHECK(static_cast<int64_t>(c.logits.size()) / vocab <= 2 * res->window.chunk_frames);
      CHECK(chunks.size() >= static_cast<std::size_t>(next / (2 * res->window.chunk_frames)));
    }
    for (auto& a : experts) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(spill[0], caf::exit_reason::user_shutdown);
    caf::anon_send_exit(batcher, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(probe, caf::exit_reason::user_shutdown);
    sched.run();
  }
}
