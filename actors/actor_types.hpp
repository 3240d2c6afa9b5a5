#pragma once
/// Typed interfaces (caf::typed_actor) of the actors that run token blocks, so the compiler
/// checks every message sent to them and every handler of their replies: a block sent with the
/// wrong payload, or a reply taken as the wrong type, does not build.
///
///   block_sink_actor     (block_atom, block_msg) -> reply_msg: what the batcher sends a layer's
///                        block to (an expert shard, or a spillway standing in for one)
///   expert_actor_type    a block sink, plus its own report timer
///   spillway_actor_type  a block sink, plus the replicated (hot) expert set and its report timer
///   metrics_actor_type   takes every actor's actor_report, answers snapshot_atom with the
///                        snapshot JSON, plus its own publish timer (report_atom)
///   supervisor_actor_type  the engine's root (actors/supervisor_actor.hpp): opens channels
///                        (open_atom -> open_reply), drains and aborts them, answers the shard
///                        handles, takes queue waits from lanes and drained notices from
///                        channels, plus its report timer
///   compute_actor_type   a lane, or the batcher (actors/batcher_actor.hpp): a channel's
///                        features (features_atom, feature_chunk), the supervisor's shard
///                        handles (shards_atom, ...) and channel drops (drop_atom, channel_id),
///                        its own timers (flush_atom, report_atom). What channels hold
///                        (lane_set) and send their features to.
///   channel_actor_type   a channel (actors/messages.hpp, beside open_reply, which carries it):
///                        audio, samples, segments, end, abort, progress from its front end or
///                        feeder; logits from a lane; a restarted lane from the supervisor; its
///                        report timer. It answers its (untyped) subscriber through send_as.
///
/// An expert_actor_type or spillway_actor_type handle converts to a block_sink_actor (a
/// subset of its interface); the other way does not compile.

#include <caf/all.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/messages.hpp"

namespace sluice::actors {

using block_sink_actor = caf::typed_actor<caf::replies_to<block_atom, block_msg>::with<reply_msg>>;

using expert_actor_type = block_sink_actor::extend<caf::reacts_to<report_atom>>;

using spillway_actor_type =
    block_sink_actor::extend<caf::reacts_to<hot_atom, std::vector<uint8_t>>, caf::reacts_to<report_atom>>;

using metrics_actor_type = caf::typed_actor<caf::reacts_to<actor_report>, caf::replies_to<snapshot_atom>::with<std::string>,
                                            caf::reacts_to<report_atom>>;

using compute_actor_type =
    caf::typed_actor<caf::reacts_to<shards_atom, std::vector<block_sink_actor>, std::vector<spillway_actor_type>>,
                     caf::reacts_to<features_atom, feature_chunk>, caf::reacts_to<drop_atom, channel_id>,
                     caf::reacts_to<flush_atom>, caf::reacts_to<report_atom>>;

using supervisor_actor_type = caf::typed_actor<
    caf::replies_to<open_atom, channel_request, caf::actor>::with<open_reply>, caf::replies_to<drain_atom>::with<bool>,
    caf::replies_to<abort_atom>::with<int64_t>,
    caf::replies_to<shards_atom>::with<std::vector<expert_actor_type>, std::vector<spillway_actor_type>, caf::actor>,
    caf::reacts_to<load_atom, double>, caf::reacts_to<drained_atom, channel_id>, caf::reacts_to<report_atom>>;

}  // namespace sluice::actors
