#pragma once
/// supervisor_actor: the root of one engine. Spawns the expert actors, the spillways and the
/// batcher and monitors them: one that fails is spawned again with the same shard and the
/// others are told its new handle (a failed batcher: every channel is told, and loses only
/// the utterances it had in flight). Admits channels: it refuses a new one, with the reason,
/// when [engine] max_channels are open, when ready audio already waits longer than
/// max_queue_wait_ms for the batcher, when the request is bad, or while draining. Drains on
/// shutdown: every channel finishes the audio it accepted, then the reply comes.
///
/// With `lanes` = K > 0 ([engine] lanes, or the placement plan's count when that is -1) it
/// spawns K lane actors instead (each on its own thread; no expert actor, no spillway). The
/// lanes (or the batcher alone) are the slots of a lane_set it shares with every channel, which
/// places each new utterance on the lane with the least outstanding work (lane_set.hpp). A failed
/// lane is restarted into its slot and every channel is told which actor died, (batcher_atom,
/// i32 slot, caf::actor_addr); a channel loses only the utterances it had on that actor. The
/// supervisor reports each lane's outstanding work as gauge lane_load_frames/<i>. Admission then
/// looks at the most loaded lane's queue wait. shards_atom answers lane 0 as the batcher.
///
/// Messages:
///   (open_atom, channel_request, caf::actor subscriber) -> open_reply
///   (drain_atom) -> bool            after every channel has drained; new channels refused. Live
///                                   channels are sent their end; file channels (offline) are
///                                   left to their feeder's end, after the whole file
///   (abort_atom) -> i64             the drain ran out of time: every open channel aborted
///   (shards_atom) -> (std::vector<expert_actor_type> experts, std::vector<spillway_actor_type>
///                     spillways, caf::actor batcher)   (actors/actor_types.hpp)
///   (load_atom, double)             from the batcher or a lane: how long ready audio waits (ms)
///   (drained_atom, channel_id)      from a channel that has finished
///   (report_atom)                   timer

#include <caf/all.hpp>

#include <memory>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/engine_resources.hpp"

namespace sluice::actors {

/// Typed (supervisor_actor_type): the messages above are checked where they are sent.
/// `lanes` > 0: that many lanes, given new utterances in proportion to `lane_speeds` (frames/s
/// each, the placement plan's; empty: all equal; lane_set); 0: the batcher and expert actors.
supervisor_actor_type::behavior_type supervisor_actor(supervisor_actor_type::pointer self,
                                                      std::shared_ptr<const engine_resources> res,
                                                      metrics_actor_type metrics, int lanes,
                                                      std::vector<double> lane_speeds);

}  // namespace sluice::actors
