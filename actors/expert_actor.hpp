#pragma once
/// expert_actor: owns one shard of the routed experts (engine_resources::placement) on one
/// device; today a CPU core set (the actor's own thread when [engine]
/// dedicated_expert_threads), tomorrow a GPU and stream behind the same messages.
///
/// Messages:
///   (block_atom, block_msg) -> reply_msg   runs the block; an error reply for a bad block
///   (report_atom)                         timer: sends an actor_report to the metrics actor
/// Nothing else; the batcher never waits on it synchronously.

#include <caf/all.hpp>

#include <memory>
#include <string>

#include "actors/engine_resources.hpp"

namespace sluice::actors {

/// Spawn with sys.spawn(expert_actor, resources, shard, metrics) (metrics may be invalid).
caf::behavior expert_actor(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res, int32_t shard,
                           caf::actor metrics);

/// The same actor for a shard of an arbitrary placement (tests, remote shards);
/// `preallocate_pairs` > 0: its workspace is committed for blocks of that many pairs.
caf::behavior expert_actor_for(caf::event_based_actor* self, std::shared_ptr<const moe::acoustic_model> model,
                               moe::expert_placement placement, int32_t shard, caf::actor metrics, int report_ms,
                               int64_t preallocate_pairs);

}  // namespace sluice::actors
