#pragma once
/// spillway_actor: takes the (token, expert) pairs past an expert shard's capacity. The batcher
/// sends a spillway the overflow block of a layer, which holds only pairs of the experts the
/// spillway currently replicates: the hottest experts of each layer by moving-average load,
/// re-chosen every [engine] rebalance_ms (EPLB-like) and announced with hot_atom before any
/// block that uses them (same sender, so in order).
///
/// A spillway holds only what it serves: the replicated experts, plus the experts of every
/// shard it has stood in for. It starts holding nothing. When an expert actor is down or late
/// the batcher fails that shard's block over to a spillway (the block names its shard); the
/// spillway then takes over the shard's experts (placement) and keeps them, as the shard may
/// fail again. A block naming an expert it does not hold is refused with the reason (an
/// overflow block that fails over after a rebalance dropped its expert: the half is aborted and
/// its utterances report the error; nothing hangs).
///
/// A typed, stateful actor (spillway_actor_type, actors/actor_types.hpp):
///   (block_atom, block_msg) -> reply_msg
///   (hot_atom, std::vector<uint8_t>)   replicated experts, u8 [n_layers, n_routed]
///   (report_atom)                      timer: report to the metrics actor (gauges replicas,
///                                      held_experts, standin_shards)

#include <caf/all.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "actors/actor_meter.hpp"
#include "actors/actor_types.hpp"
#include "actors/block_runner.hpp"
#include "actors/engine_resources.hpp"

namespace sluice::actors {

/// What a spillway keeps between messages (caf::stateful_actor's state).
struct spillway_state {
  std::shared_ptr<const engine_resources> res;
  std::optional<block_runner> runner;
  actor_meter meter;
  metrics_actor_type metrics;
  int32_t index = 0;
  int32_t n_shards = 0;
  std::vector<uint8_t> replicated;  // u8 [n_layers, n_routed]: the batcher's hot set
  std::vector<uint8_t> standin;     // u8 [n_shards]: shards this spillway has stood in for
};

using spillway_pointer = spillway_actor_type::stateful_pointer<spillway_state>;

/// Spawn with sys.spawn(spillway_actor, resources, index, metrics) (metrics may be invalid).
spillway_actor_type::behavior_type spillway_actor(spillway_pointer self, std::shared_ptr<const engine_resources> res,
                                                  int32_t index, metrics_actor_type metrics);

}  // namespace sluice::actors
