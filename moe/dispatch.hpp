#pragma once
/// Where the (token, expert) pairs of one layer of a micro-batch go: to the shard holding the
/// expert, up to a capacity per shard; past it, to the token's next-best expert on a shard
/// with room (reroute_overflow) or to the overflow block, which the spillway runs on replicas.
/// No pair is ever dropped: every pair ends in exactly one block.

#include <cstdint>
#include <limits>
#include <vector>

#include "config/overflow_policy.hpp"
#include "moe/expert_placement.hpp"
#include "moe/routing.hpp"

namespace sluice::moe {

struct workspace;
struct step_bounds;

/// No capacity limit on a shard.
inline constexpr int64_t unlimited_capacity = std::numeric_limits<int64_t>::max();

/// What happens to pairs over a shard's capacity: config/overflow_policy.hpp (one enum, the
/// names [engine] overflow uses).
using config::overflow_policy;

/// Counts of one layer's dispatch (summed over layers by micro_batch). Nothing is dropped:
/// pairs over capacity = rerouted + spilled + kept.
struct dispatch_stats {
  int64_t pairs = 0;          ///< (token, expert) pairs: tokens * top_k
  int64_t over_capacity = 0;  ///< pairs a full shard turned away
  int64_t rerouted = 0;       ///< of those, moved to another expert of the token's groups
  int64_t spilled = 0;        ///< of those, sent in the overflow block
  int64_t kept = 0;           ///< of those, left on their own full shard (no replica, no room elsewhere)

  dispatch_stats& operator+=(const dispatch_stats& o) {
    pairs += o.pairs;
    over_capacity += o.over_capacity;
    rerouted += o.rerouted;
    spilled += o.spilled;
    kept += o.kept;
    return *this;
  }
};

/// The destination of every pair of one layer. Pair p = t * top_k + j is token t's j-th
/// choice of the routing.
struct dispatch_plan {
  int32_t n_shards = 0;
  int top_k = 0;
  int64_t n_tokens = 0;
  std::vector<int32_t> expert;    ///< i32 [n_tokens, top_k]: the routing's choice, or its replacement
  std::vector<float> weight;      ///< f32 [n_tokens, top_k]: gate weight of expert[p]
  std::vector<int32_t> block;     ///< i32 [n_tokens, top_k]: shard 0 .. n_shards - 1, or overflow_block()
  std::vector<int64_t> load;      ///< [n_shards + 1]: pairs per block, the overflow block last
  std::vector<int32_t> overflow;  ///< the pairs in the overflow block, highest gate weight first
  dispatch_stats stats;

  int32_t overflow_block() const { return n_shards; }
};

/// Commits `plan` and ws's dispatch buffers for the largest step of `bounds` (preallocation).
void preallocate_dispatch(const architecture& arch, const step_bounds& bounds, dispatch_plan& plan, workspace& ws);

/// Sends each pair of `r` (routing of `layer`) to the shard `placement` gives its expert, at
/// most `capacity` (>= 0) pairs per shard. A shard asked for more keeps the pairs with the
/// highest gate weights (the lower pair id among equals); the others go to the overflow block.
void assign_to_shards(const routing& r, const expert_placement& placement, int layer, int64_t capacity,
                      dispatch_plan& plan, workspace& ws);

/// Moves the overflow block's pairs, highest gate weight first, to next_best_expert of their
/// token among the experts whose shard has fewer than `capacity` pairs, with
/// replacement_weight; the pairs with no such expert stay in the overflow block. Returns the
/// number moved (also added to plan.stats). expert_bias: f32 [n_experts] of the layer.
int64_t reroute_overflow(const routing& r, const float* expert_bias, const expert_placement& placement, int layer,
                         int64_t capacity, dispatch_plan& plan, workspace& ws);

}  // namespace sluice::moe

namespace sluice::moe {

/// After assign_to_shards: each overflow pair whose expert the spillway replicates
/// (replicated[expert] != 0, u8 [n_experts] of this layer; null: none) stays in the overflow
/// block; each other one moves to its token's next-best expert with room (reroute_overflow),
/// or, when there is none, back onto its own shard past the capacity (counted as kept). So
/// no pair is dropped, and the spillway only ever runs experts it replicates. With `reroute`
/// false no pair moves to another expert (kept instead).
void settle_overflow(const routing& r, const float* expert_bias, const expert_placement& placement, int layer,
                     int64_t capacity, const uint8_t* replicated, dispatch_plan& plan, workspace& ws,
                     bool reroute = true);

}  // namespace sluice::moe
