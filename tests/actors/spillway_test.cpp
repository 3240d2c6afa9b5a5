// A spillway holds only what it serves: nothing until the batcher announces its hot set, then
// exactly the replicated experts, plus the experts of a shard once it has stood in for that
// shard's failed expert actor. A block naming any other expert is refused with the reason.
#include "tests/actors/engine_test_util.hpp"

#include "actors/spillway_actor.hpp"
#include "actors/system_config.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

// One row of zeros with one pair (weight 1) on `expert` of layer 0, sent as shard `shard`'s
// block (n_shards: the overflow block).
block_msg one_pair(const moe::acoustic_model& model, int32_t shard, int32_t expert) {
  auto b = std::make_shared<moe::token_block>();
  b->layer = 0;
  b->shard = shard;
  b->d = model.arch().d_model;
  b->rows.assign(static_cast<std::size_t>(b->d), 0.0f);
  b->pair_row = {0};
  b->pair_expert = {expert};
  b->pair_weight = {1.0f};
  return block_msg{block_encoding::f32, b, std::make_shared<fp8_rows>(), std::make_shared<moe::expert_output>()};
}

// Whether the spillway runs the block (true) or refuses it (false, with a reason naming "hold").
bool runs(caf::scoped_actor& self, const spillway_actor_type& spill, const block_msg& m) {
  bool ok = false;
  self->request(spill, std::chrono::seconds(10), block_atom::value, m)
      .receive([&](reply_msg&) { ok = true; },
               [&](caf::error& e) {
                 CHECK_MESSAGE(self->system().render(e).find("does not hold") != std::string::npos,
                               self->system().render(e));
               });
  return ok;
}

double gauge(const actor_report& r, const std::string& key) {
  for (std::size_t i = 0; i < r.gauge_keys.size(); ++i)
    if (r.gauge_keys[i] == key) return r.gauges[i];
  return -1;
}

}  // namespace

TEST_SUITE("spillway") {
  TEST_CASE("a spillway holds only the replicated experts and the shards it stood in for") {
    auto cfg = test::base_config();
    cfg.engine.expert_shards = 2;
    auto res = test::resources(cfg);
    const auto& model = *res->model;
    const auto& arch = model.arch();
    const int32_t n_shards = res->placement.n_shards();
    REQUIRE(n_shards == 2);
    // One expert of shard 1 and two of shard 0 (layer 0), from the placement.
    int32_t of_shard1 = -1, first0 = -1, second0 = -1;
    for (int32_t e = 0; e < arch.n_routed; ++e) {
      if (res->placement.shard_of(0, e) == 1 && of_shard1 < 0) of_shard1 = e;
      if (res->placement.shard_of(0, e) == 0) {
        if (first0 < 0) first0 = e;
        else if (second0 < 0) second0 = e;
      }
    }
    REQUIRE(of_shard1 >= 0);
    REQUIRE(first0 >= 0);
    REQUIRE(second0 >= 0);
    int32_t other1 = -1;  // a second expert of shard 1, never replicated
    for (int32_t e = 0; e < arch.n_routed; ++e)
      if (res->placement.shard_of(0, e) == 1 && e != of_shard1) other1 = e;
    REQUIRE(other1 >= 0);

    engine_system_config sys_cfg(1);
    caf::actor_system sys{sys_cfg};
    caf::scoped_actor self{sys};
    auto spill = sys.spawn(spillway_actor, res, 0, caf::actor_cast<metrics_actor_type>(self));

    // Before any hot set: it holds nothing, so an overflow block is refused.
    CHECK_FALSE(runs(self, spill, one_pair(model, n_shards, of_shard1)));

    std::vector<uint8_t> hot(static_cast<std::size_t>(int64_t{arch.n_layers} * arch.n_routed), 0);
    hot[static_cast<std::size_t>(of_shard1)] = 1;  // layer 0
    self->send(spill, hot_atom::value, hot);
    CHECK(runs(self, spill, one_pair(model, n_shards, of_shard1)));
    CHECK_FALSE(runs(self, spill, one_pair(model, n_shards, other1)));
    CHECK_FALSE(runs(self, spill, one_pair(model, n_shards, first0)));

    // Shard 0's expert actor failed: its block comes here, and the spillway takes the shard over.
    CHECK(runs(self, spill, one_pair(model, 0, first0)));
    CHECK(runs(self, spill, one_pair(model, n_shards, second0)));
    CHECK_FALSE(runs(self, spill, one_pair(model, n_shards, other1)));

    // Its reports say the same: one replica plus every expert of shard 0, one stand-in shard.
    int64_t shard0_experts = 0;
    for (int l = 0; l < arch.n_layers; ++l)
      for (int32_t e = 0; e < arch.n_routed; ++e) shard0_experts += res->placement.shard_of(l, e) == 0;
    const double all = static_cast<double>(int64_t{arch.n_layers} * arch.n_routed);
    // A report sent after the last reply reflects the final state; earlier ones may not.
    bool seen = false;
    for (int i = 0; i < 100 && !seen; ++i)
      self->receive([&](actor_report& r) { seen = gauge(r, "held_experts") == static_cast<double>(1 + shard0_experts); },
                    caf::after(std::chrono::seconds(5)) >> [&] { i = 100; });
    CHECK(seen);
    CHECK(static_cast<double>(1 + shard0_experts) < all);  // less than every expert
    caf::anon_send_exit(spill, caf::exit_reason::user_shutdown);
  }
}
