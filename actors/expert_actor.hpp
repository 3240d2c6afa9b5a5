#pragma once
/// expert_actor: owns one shard of the routed experts (engine_resources::placement) on one
/// device; today a CPU core set (the actor's own thread when [engine]
/// dedicated_expert_threads), tomorrow a GPU and stream behind the same messages.
///
/// A typed, stateful actor (expert_actor_type, actors/actor_types.hpp):
///   (block_atom, block_msg) -> reply_msg   runs the block; an error reply for a bad block
///   (report_atom)                         timer: sends an actor_report to the metrics actor
/// Nothing else; the batcher never waits on it synchronously.

#include <caf/all.hpp>

#include <memory>
#include <optional>
#include <string>

#include "actors/actor_meter.hpp"
#include "actors/actor_types.hpp"
#include "actors/block_runner.hpp"
#include "actors/engine_resources.hpp"

namespace sluice::actors {

/// What an expert actor keeps between messages (caf::stateful_actor's state).
struct expert_state {
  std::shared_ptr<const moe::acoustic_model> model;  // keeps the weights alive
  std::optional<block_runner> runner;
  actor_meter meter;
  metrics_actor_type metrics;
  int report_ms = 0;
  int64_t last_bytes_in = 0, last_bytes_out = 0, last_blocks = 0;
};

using expert_pointer = expert_actor_type::stateful_pointer<expert_state>;

/// Spawn with sys.spawn(expert_actor, resources, shard, metrics) (metrics may be invalid).
expert_actor_type::behavior_type expert_actor(expert_pointer self, std::shared_ptr<const engine_resources> res,
                                              int32_t shard, metrics_actor_type metrics);

/// The same actor for a shard of an arbitrary placement (tests, remote shards);
/// `preallocate_pairs` > 0: its workspace is committed for blocks of that many pairs; `compute`
/// as the engine's (engine_resources::compute: SIMD level, backends, bf16 weights).
expert_actor_type::behavior_type expert_actor_for(expert_pointer self, std::shared_ptr<const moe::acoustic_model> model,
                                                  moe::expert_placement placement, int32_t shard, metrics_actor_type metrics,
                                                  int report_ms, int64_t preallocate_pairs, moe::compute_options compute);

}  // namespace sluice::actors
