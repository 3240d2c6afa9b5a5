#pragma once
/// spillway_actor: takes the (token, expert) pairs past an expert shard's capacity. The batcher
/// sends a spillway the overflow block of a layer, which holds only pairs of the experts the
/// spillway currently replicates: the hottest experts of each layer by moving-average load,
/// re-chosen every [engine] rebalance_ms (EPLB-like) and announced with hot_atom. In one
/// process a replica is the shared read-only weights, so a spillway can also run any expert:
/// the batcher fails a block over to a spillway when its expert actor is down or late, and no
/// token is lost.
///
/// Messages:
///   (block_atom, block_msg) -> reply_msg
///   (hot_atom, std::vector<uint8_t>)   replicated experts, u8 [n_layers, n_routed]
///   (report_atom)                      timer: report to the metrics actor

#include <caf/all.hpp>

#include <memory>

#include "actors/engine_resources.hpp"

namespace sluice::actors {

caf::behavior spillway_actor(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res, int32_t index,
                             caf::actor metrics);

}  // namespace sluice::actors
