#include "moe/dispatch.hpp"

#include <algorithm>
#include <numeric>

#include "moe/workspace.hpp"

namespace sluice::moe {

void preallocate_dispatch(const architecture& arch, const step_bounds& bounds, dispatch_plan& plan, workspace& ws) {
  const int64_t pairs = bounds.tokens * arch.top_k;
  for (auto* v : {&plan.expert, &plan.block, &plan.overflow, &ws.pair_rank}) ws.commit(*v, pairs);
  ws.commit(plan.weight, pairs);
  ws.commit(plan.load, bounds.blocks);  // shards + 1
  ws.commit(ws.expert_full, arch.n_routed);
}

void assign_to_shards(const routing& r, const expert_placement& placement, int layer, int64_t capacity,
                      dispatch_plan& plan, workspace& ws) {
  const int64_t pairs = r.n * r.top_k;
  const int32_t shards = placement.n_shards();
  plan.n_shards = shards;
  plan.top_k = r.top_k;
  plan.n_tokens = r.n;
  ws.fit(plan.expert, pairs);
  ws.fit(plan.weight, pairs);
  ws.fit(plan.block, pairs);
  ws.fit(plan.load, shards + 1);
  std::copy_n(r.experts.begin(), pairs, plan.expert.begin());
  std::copy_n(r.weights.begin(), pairs, plan.weight.begin());
  std::fill(plan.load.begin(), plan.load.end(), 0);
  for (int64_t p = 0; p < pairs; ++p) ++plan.load[placement.shard_of(layer, plan.expert[p])];
  const bool over = std::any_of(plan.load.begin(), plan.load.end() - 1, [&](int64_t n) { return n > capacity; });
  ws.fit(plan.overflow, 0);
  plan.stats = dispatch_stats{pairs, 0, 0, 0};
  if (!over) {
    for (int64_t p = 0; p < pairs; ++p) plan.block[p] = placement.shard_of(layer, plan.expert[p]);
    return;
  }
  // Admit pairs by gate weight, heaviest first, so that what overflows is what matters least.
  auto& rank = ws.pair_rank;
  ws.fit(rank, pairs);
  std::iota(rank.begin(), rank.end(), 0);
  std::sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
    return plan.weight[a] != plan.weight[b] ? plan.weight[a] > plan.weight[b] : a < b;
  });
  ws.fit(plan.overflow, pairs);
  std::fill(plan.load.begin(), plan.load.end(), 0);
  int64_t spilled = 0;
  for (int32_t p : rank) {
    const int32_t s = placement.shard_of(layer, plan.expert[p]);
    if (plan.load[s] < capacity) {
      plan.block[p] = s;
    } else {
      plan.block[p] = plan.overflow_block();
      plan.overflow[spilled++] = p;
    }
    ++plan.load[plan.block[p]];
  }
  plan.overflow.resize(spilled);
  plan.stats.over_capacity = plan.stats.spilled = spilled;
}

int64_t reroute_overflow(const routing& r, const float* expert_bias, const expert_placement& placement, int layer,
                         int64_t capacity, dispatch_plan& plan, workspace& ws) {
  const int64_t experts = r.n_experts;
  auto& full = ws.expert_full;
  ws.fit(full, experts);
  for (int64_t e = 0; e < experts; ++e)
    full[e] = plan.load[placement.shard_of(layer, static_cast<int32_t>(e))] >= capacity;
  int64_t left = 0, moved = 0;
  for (int32_t p : plan.overflow) {
    const int64_t t = p / plan.top_k;
    const int32_t e = next_best_expert(r, expert_bias, t, plan.expert.data() + t * plan.top_k, full.data());
    if (e < 0) {
      plan.overflow[left++] = p;
      continue;
    }
    const int32_t s = placement.shard_of(layer, e);
    plan.expert[p] = e;
    plan.weight[p] = replacement_weight(r, t, e);
    plan.block[p] = s;
    --plan.load[plan.overflow_block()];
    ++moved;
    if (++plan.load[s] >= capacity)
      for (int64_t i = 0; i < experts; ++i)
        if (placement.shard_of(layer, static_cast<int32_t>(i)) == s) full[i] = 1;
  }
  plan.overflow.resize(left);
  plan.stats.rerouted += moved;
  plan.stats.spilled = left;
  return moved;
}

void settle_overflow(const routing& r, const float* expert_bias, const expert_placement& placement, int layer,
                     int64_t capacity, const uint8_t* replicated, dispatch_plan& plan, workspace& ws, bool reroute) {
  if (plan.overflow.empty()) return;
  // Split the overflow list (highest gate weight first) into the replicated pairs, which stay,
  // and the others, which try to reroute; both keep their order.
  auto& hot = ws.pair_rank;  // free after assign_to_shards
  ws.fit(hot, static_cast<std::size_t>(plan.stats.pairs));  // sized by the step's shape, not by the data
  std::size_t n_hot = 0, n_cold = 0;
  for (int32_t p : plan.overflow) {
    if (replicated && replicated[plan.expert[p]]) hot[n_hot++] = p;
    else plan.overflow[n_cold++] = p;
  }
  plan.overflow.resize(n_cold);
  if (n_cold > 0 && reroute) reroute_overflow(r, expert_bias, placement, layer, capacity, plan, ws);
  int64_t kept = 0;
  for (int32_t p : plan.overflow) {
    const int32_t s = placement.shard_of(layer, plan.expert[p]);
    plan.block[p] = s;
    --plan.load[plan.overflow_block()];
    ++plan.load[s];
    ++kept;
  }
  plan.overflow.resize(n_hot);
  std::copy_n(hot.begin(), n_hot, plan.overflow.begin());
  plan.stats.kept += kept;
  plan.stats.spilled = static_cast<int64_t>(n_hot);
}

}  // namespace sluice::moe
