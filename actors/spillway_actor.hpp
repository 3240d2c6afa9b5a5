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
/// Messages:
///   (block_atom, block_msg) -> reply_msg
///   (hot_atom, std::vector<uint8_t>)   replicated experts, u8 [n_layers, n_routed]
///   (report_atom)                      timer: report to the metrics actor (gauges replicas,
///                                      held_experts, standin_shards)

#include <caf/all.hpp>

#include <memory>

#include "actors/engine_resources.hpp"

namespace sluice::actors {

caf::behavior spillway_actor(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res, int32_t index,
                             caf::actor metrics);

}  // namespace sluice::actors
