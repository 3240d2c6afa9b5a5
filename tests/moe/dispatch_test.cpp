// Shard capacity and overflow: which pairs a full shard turns away, where rerouting sends
// them, that nothing is dropped, and that the batched step computes exactly the model with
// those reroutes (checked against a scalar recomputation of each layer's MoE). Also the
// placement's validation and the misuse of a micro-batch or an expert shard.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "moe/dispatch.hpp"
#include "moe/micro_batch.hpp"
#include "moe/workspace.hpp"
#include "tests/moe/batch_test_util.hpp"
#include "tests/moe/model_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;
using test::fed_stream;
using test::shard_set;

namespace {

constexpr double scalar_tolerance = 1e-5;

// out += scale * SwiGLU(y), in double, straight from the packed weights.
void scalar_swiglu(const float* gate_up, const float* down, int64_t d, int64_t hidden, const float* y, double scale,
                   std::vector<double>& out) {
  for (int64_t j = 0; j < hidden; ++j) {
    double g = 0, u = 0;
    for (int64_t i = 0; i < d; ++i) {
      g += double(y[i]) * gate_up[i * 2 * hidden + j];
      u += double(y[i]) * gate_up[i * 2 * hidden + hidden + j];
    }
    const double a = g / (1.0 + std::exp(-g)) * u;
    for (int64_t c = 0; c < d; ++c) out[c] += scale * a * down[j * d + c];
  }
}

// The architecture of a routing made by hand: 4 experts in 2 groups of 2, both groups kept,
// top 2 experts.
routing hand_routing() {
  routing r;
  r.n = 3;
  r.top_groups = 2;
  r.top_k = 2;
  r.n_groups = 2;
  r.n_experts = 4;
  r.groups = {0, 1, 0, 1, 0, 1};
  r.experts = {0, 1, 0, 2, 1, 0};
  r.weights = {0.6f, 0.4f, 0.7f, 0.3f, 0.5f, 0.5f};
  r.group_scores = {0.9f, 0.2f, 0.8f, 0.5f, 0.7f, 0.6f};
  r.expert_scores = {0.9f, 0.6f, 0.1f, 0.1f,   // token 0
                     0.9f, 0.1f, 0.5f, 0.1f,   // token 1
                     0.6f, 0.6f, 0.3f, 0.8f};  // token 2: e3 scores higher, but e2's bias wins
  return r;
}

architecture hand_arch() {
  architecture a;
  a.n_layers = 1;
  a.n_routed = 4;
  a.n_groups = 2;
  return a;
}

}  // namespace

TEST_SUITE("batch") {
  TEST_CASE("dispatch: a full shard keeps its heaviest pairs, reroute picks the next-best expert with room") {
    const routing r = hand_routing();
    const auto placement = expert_placement::same_in_every_layer(hand_arch(), {{0, 1}, {2, 3}});
    REQUIRE(placement.has_value());
    const std::vector<float> bias = {0.0f, 0.0f, 0.6f, 0.0f};
    workspace ws;
    dispatch_plan plan;

    assign_to_shards(r, *placement, 0, unlimited_capacity, plan, ws);
    CHECK(plan.load == std::vector<int64_t>{5, 1, 0});
    CHECK(plan.overflow.empty());

    // Capacity 2: shard 0 is asked for 5 pairs and keeps the two heaviest (0.7 and 0.6); the
    // others overflow heaviest first, the lower pair id first among equal weights.
    assign_to_shards(r, *placement, 0, 2, plan, ws);
    CHECK(plan.block == std::vector<int32_t>{0, 2, 0, 1, 2, 2});
    CHECK(plan.overflow == std::vector<int32_t>{4, 5, 1});
    CHECK(plan.load == std::vector<int64_t>{2, 1, 3});
    CHECK(plan.stats.over_capacity == 3);
    CHECK(plan.stats.spilled == 3);

    // Token 2's first overflowing pair goes to expert 2 (0.3 + bias 0.6 beats expert 3's
    // 0.8), filling shard 1; nothing is left with room for the other two.
    CHECK(reroute_overflow(r, bias.data(), *placement, 0, 2, plan, ws) == 1);
    CHECK(plan.expert == std::vector<int32_t>{0, 1, 0, 2, 2, 0});
    CHECK(plan.block == std::vector<int32_t>{0, 2, 0, 1, 1, 2});
    CHECK(plan.overflow == std::vector<int32_t>{5, 1});
    CHECK(plan.load == std::vector<int64_t>{2, 2, 2});
    CHECK(plan.stats.rerouted == 1);
    CHECK(plan.stats.spilled == 2);
    CHECK(plan.stats.over_capacity == plan.stats.rerouted + plan.stats.spilled);
    // Its weight: expert 2's own unbiased score over the sum that normalised token 2.
    const float sum = 0.6f * 0.7f + 0.6f * 0.7f;
    CHECK(plan.weight[4] == doctest::Approx(0.3f * 0.6f / sum));
    CHECK(plan.weight[4] == replacement_weight(r, 2, 2));

    const std::vector<uint8_t> none(4, 0), all_but_3 = {1, 1, 1, 0};
    const int32_t taken[] = {1, 0};
    CHECK(next_best_expert(r, bias.data(), 2, taken, none.data()) == 2);
    CHECK(next_best_expert(r, bias.data(), 2, taken, all_but_3.data()) == 3);
    const int32_t all_taken[] = {2, 3};
    CHECK(next_best_expert(r, bias.data(), 2, all_taken, all_but_3.data()) == -1);
  }

  TEST_CASE("settle_overflow: replicated experts spill, the others reroute or stay on their shard") {
    const routing r = hand_routing();
    const auto placement = expert_placement::same_in_every_layer(hand_arch(), {{0, 1}, {2, 3}});
    REQUIRE(placement.has_value());
    const std::vector<float> bias = {0.0f, 0.0f, 0.6f, 0.0f};
    workspace ws;
    dispatch_plan plan;

    // Capacity 2: overflow is pairs 4 (e1), 5 (e0), 1 (e1), heaviest first. Expert 0 is
    // replicated: pair 5 spills. Pair 4 (token 2) reroutes to expert 2, which fills shard 1;
    // pair 1 (token 0) finds no expert with room and stays on shard 0 past its capacity.
    assign_to_shards(r, *placement, 0, 2, plan, ws);
    const std::vector<uint8_t> replicated = {1, 0, 0, 0};
    settle_overflow(r, bias.data(), *placement, 0, 2, replicated.data(), plan, ws);
    CHECK(plan.overflow == std::vector<int32_t>{5});
    CHECK(plan.block == std::vector<int32_t>{0, 0, 0, 1, 1, 2});
    CHECK(plan.expert == std::vector<int32_t>{0, 1, 0, 2, 2, 0});
    CHECK(plan.load == std::vector<int64_t>{3, 2, 1});
    CHECK(plan.stats.spilled == 1);
    CHECK(plan.stats.rerouted == 1);
    CHECK(plan.stats.kept == 1);
    CHECK(plan.stats.over_capacity == plan.stats.spilled + plan.stats.rerouted + plan.stats.kept);
    CHECK(plan.load[0] + plan.load[1] + plan.load[2] == plan.stats.pairs);

    // Nothing replicated: nothing spills; every pair ends on a shard.
    assign_to_shards(r, *placement, 0, 2, plan, ws);
    settle_overflow(r, bias.data(), *placement, 0, 2, nullptr, plan, ws);
    CHECK(plan.overflow.empty());
    CHECK(plan.load[2] == 0);
    CHECK(plan.stats.spilled == 0);
    CHECK(plan.stats.rerouted + plan.stats.kept == plan.stats.over_capacity);
  }

  TEST_CASE("capacity-limited shards: reroutes and spills, no pair dropped, and the model with those reroutes") {
    auto model = test::tiny_model();
    const auto& arch = model->arch();
    const auto& weights = model->weights();
    const int64_t d = arch.d_model;
    const auto fbanks = test::five_fbanks(arch.n_mels);

    // The unconstrained run, then the same input with tight shards.
    auto run = [&](int64_t capacity, overflow_policy policy, const test::layer_hooks& hooks) {
      auto streams = test::make_streams(*model, fbanks);
      shard_set ex(*model, *expert_placement::contiguous(arch, 4));
      ex.capacity = capacity;
      ex.policy = policy;
      micro_batch mb(*model, 3);
      dispatch_stats total;
      test::run_engine(streams, arch.n_mels, [&](std::vector<fed_stream*>& active) {
        test::step_one_batch(mb, ex, active, hooks);
        total += mb.step_stats();
      });
      std::vector<float> all;
      for (auto& s : streams) all.insert(all.end(), s.logits.begin(), s.logits.end());
      return std::pair{all, total};
    };
    const auto [free_logits, free_stats] = run(unlimited_capacity, overflow_policy::reroute_spill, {});
    CHECK(free_stats.over_capacity == 0);

    // Each layer of the tight run: the plan is sound, and the layer's output is x + shared +
    // the planned pairs, recomputed in scalar double precision.
    const int64_t capacity = 8;
    std::vector<float> x_mid, y;
    dispatch_plan plan;
    double worst = 0;
    test::layer_hooks hooks;
    hooks.after_dispatch = [&](const micro_batch& mb) {
      const routing& r = mb.route();
      const auto& p = mb.plan();
      const int64_t pairs = mb.n_tokens() * r.top_k;
      REQUIRE(p.stats.pairs == pairs);
      CHECK(std::accumulate(p.load.begin(), p.load.end(), int64_t{0}) == pairs);  // none dropped
      for (int32_t s = 0; s < p.n_shards; ++s) CHECK(p.load[s] <= capacity);
      CHECK(p.stats.over_capacity == p.stats.rerouted + p.stats.spilled);
      CHECK(static_cast<int64_t>(p.overflow.size()) == p.stats.spilled);
      CHECK(p.load[p.overflow_block()] == p.stats.spilled);
      int64_t moved = 0;
      for (int64_t t = 0; t < mb.n_tokens(); ++t)
        for (int j = 0; j < r.top_k; ++j) {
          const int64_t q = t * r.top_k + j;
          if (p.expert[q] == r.experts[q]) continue;
          ++moved;
          // A reroute stays in the token's groups, never repeats one of its experts, and
          // weighs the new expert by its own score.
          const int32_t g = p.expert[q] / arch.experts_per_group();
          CHECK(std::count(r.groups.begin() + t * r.top_groups, r.groups.begin() + (t + 1) * r.top_groups, g) == 1);
          CHECK(std::count(p.expert.begin() + t * r.top_k, p.expert.begin() + (t + 1) * r.top_k, p.expert[q]) == 1);
          CHECK(p.weight[q] == replacement_weight(r, t, p.expert[q]));
        }
      CHECK(moved == p.stats.rerouted);
      x_mid.assign(mb.hidden().begin(), mb.hidden().end());
      y.assign(mb.normed().begin(), mb.normed().end());
      plan = p;
    };
    hooks.after_end = [&](const micro_batch& mb) {
      const moe_weights& w = weights.blocks[mb.layer() - 1].moe;
      for (int64_t t = 0; t < mb.n_tokens(); ++t) {
        std::vector<double> expect(x_mid.begin() + t * d, x_mid.begin() + (t + 1) * d);
        for (const auto& s : w.shared)
          scalar_swiglu(s.gate_up.data(), s.down.data(), d, s.hidden, &y[t * d], 1.0, expect);
        for (int j = 0; j < plan.top_k; ++j) {
          const int64_t q = t * plan.top_k + j;
          scalar_swiglu(w.experts.gate_up_of(plan.expert[q]), w.experts.down_of(plan.expert[q]), d, w.experts.hidden,
                        &y[t * d], plan.weight[q], expect);
        }
        for (int64_t c = 0; c < d; ++c) {
          const double err = std::abs(expect[c] - mb.hidden()[t * d + c]);
          worst = std::max(worst, err);
          CHECK(err <= scalar_tolerance);
        }
      }
    };
    const auto [tight_logits, tight_stats] = run(capacity, overflow_policy::reroute_spill, hooks);
    CHECK(tight_stats.over_capacity > 0);
    CHECK(tight_stats.rerouted > 0);
    CHECK(tight_stats.spilled > 0);
    CHECK(tight_logits.size() == free_logits.size());
    MESSAGE("capacity " << capacity << " pairs per shard and layer, 4 shards: " << tight_stats.pairs << " pairs, "
                        << tight_stats.over_capacity << " over capacity, " << tight_stats.rerouted << " rerouted, "
                        << tight_stats.spilled << " spilled, 0 dropped; max abs diff of the layers from scalar "
                        << worst << "; logits move by " << test::max_abs_diff(free_logits, tight_logits));

    // Spilling alone changes no expert: the spillway's replica gives the unconstrained result.
    const auto [spill_logits, spill_stats] = run(capacity, overflow_policy::spill, {});
    CHECK(spill_stats.rerouted == 0);
    CHECK(spill_stats.spilled == spill_stats.over_capacity);
    CHECK(test::max_abs_diff(free_logits, spill_logits) <= 1e-5);
    // No room anywhere: everything spills, and the result is again the unconstrained one.
    const auto [zero_logits, zero_stats] = run(0, overflow_policy::reroute_spill, {});
    CHECK(zero_stats.rerouted == 0);
    CHECK(zero_stats.spilled == zero_stats.pairs);
    CHECK(test::max_abs_diff(free_logits, zero_logits) <= 1e-5);
    // Room enough: nothing moves.
    const auto [roomy_logits, roomy_stats] = run(5 * 4 * arch.top_k, overflow_policy::reroute_spill, {});
    CHECK(roomy_stats.over_capacity == 0);
    CHECK(test::max_abs_diff(free_logits, roomy_logits) == 0.0);
  }

  TEST_CASE("placements are validated") {
    const architecture a = hand_arch();
    CHECK(expert_placement::same_in_every_layer(a, {{0, 1}, {2}}).error().message.find("expert 3 is on no shard") !=
          std::string::npos);
    CHECK(expert_placement::same_in_every_layer(a, {{0, 1}, {1, 2, 3}}).error().message.find("on shards 0 and 1") !=
          std::string::npos);
    CHECK(expert_placement::same_in_every_layer(a, {{0, 1, 4}, {2, 3}}).error().message.find("expert 4") !=
          std::string::npos);
    CHECK_FALSE(expert_placement::contiguous(a, 0).has_value());
    CHECK_FALSE(expert_placement::contiguous(a, 5).has_value());
    const auto two = expert_placement::contiguous(a, 2);
    REQUIRE(two.has_value());
    CHECK(two->shard_of(0, 1) == 0);
    CHECK(two->shard_of(0, 2) == 1);
  }

  TEST_CASE("misuse of a micro-batch or an expert shard is an error that changes nothing") {
    auto model = test::tiny_model();
    const auto& arch = model->arch();
    const auto fb = test::golden_fbank("synthetic2");
    auto s1 = stream_state::create(*model, {4, 2});
    auto s2 = stream_state::create(*model, {4, 2});
    REQUIRE((s1.has_value() && s2.has_value()));
    REQUIRE(s1->accept_fbank(fb.data(), 40).has_value());
    REQUIRE(s2->accept_fbank(fb.data(), 40).has_value());
    micro_batch a(*model, 1), b(*model, 2);
    stream_state* twice[] = {&*s1, &*s1};
    CHECK(a.begin(twice).error().message.find("given twice") != std::string::npos);
    CHECK_FALSE(s1->in_step());
    CHECK(a.run_dense().error().message.find("phase idle") != std::string::npos);
    stream_state* both[] = {&*s1, &*s2};
    REQUIRE(a.begin(both).has_value());
    stream_state* one[] = {&*s1};
    CHECK(b.begin(one).error().message.find("already in a step") != std::string::npos);
    CHECK_FALSE(s1->accept_fbank(fb.data(), 1).has_value());
    CHECK(a.finish().error().code == errc::invalid_argument);
    REQUIRE(a.run_dense().has_value());
    const auto placement = *expert_placement::contiguous(arch, 2);
    CHECK_FALSE(a.dispatch(placement, -1).has_value());
    REQUIRE(a.dispatch(placement).has_value());
    CHECK_FALSE(a.end_layer().has_value());  // replies outstanding

    auto shard0 = expert_shard::create(*model, placement, 0);
    REQUIRE(shard0.has_value());
    CHECK_FALSE(expert_shard::create(*model, placement, 2).has_value());
    workspace ws;
    token_block block;
    expert_output reply;
    REQUIRE(a.has_block(1));
    REQUIRE(a.fill_block(1, block).has_value());
    CHECK(shard0->run(block, reply, ws).error().message.find("does not hold") != std::string::npos);
    CHECK_FALSE(a.fill_block(a.n_blocks(), block).has_value());
    for (int32_t blk = 0; blk < a.n_blocks(); ++blk) {
      if (!a.has_block(blk)) continue;
      REQUIRE(a.fill_block(blk, block).has_value());
      auto ex = blk < placement.n_shards() ? *expert_shard::create(*model, placement, blk)
                                           : expert_shard::all_experts(*model);
      REQUIRE(ex.run(block, reply, ws).has_value());
      auto stale = reply;
      stale.step -= 1;
      CHECK(a.combine(stale).error().message.find("step") != std::string::npos);
      auto short_reply = reply;
      short_reply.out.pop_back();
      CHECK_FALSE(a.combine(short_reply).has_value());
      REQUIRE(a.combine(reply).has_value());
      CHECK(a.combine(reply).error().message.find("second reply") != std::string::npos);
    }
    block.pair_row[0] = static_cast<int32_t>(block.n_rows());
    CHECK(expert_shard::all_experts(*model).run(block, reply, ws).error().message.find("names row") !=
          std::string::npos);
    REQUIRE(a.end_layer().has_value());
    CHECK(a.layer() == 1);
  }
}
