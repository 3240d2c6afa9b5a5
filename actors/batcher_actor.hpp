#pragma once
/// batcher_actor: runs the dense part of the acoustic model for every channel at once.
///
/// Channels send feature_chunks (one stream_state per (channel, utterance), owned here: the
/// attention caches are the dense part's). Once a chunk is ready the batcher waits [engine]
/// batch_window_ms for others, then packs the streams that waited longest, up to token_budget
/// subsampled frames, sorted by step length (bucketing, so the streams of one half end
/// together), and splits them in two micro-batches: while one half's token blocks are at the
/// expert actors, the other half's dense part runs here (overlap). Layer by layer it routes,
/// cuts the pairs into one block per shard (capacity = capacity_factor x fair share; the rest
/// by settle_overflow: spillway for replicated hot experts, else next-best expert, else kept),
/// sends them, combines the replies, and at the end sends each stream's logits to its channel.
/// Every layer's (token, expert) pairs land in exactly one block: nothing is dropped.
///
/// The micro-batches' activations and the token-block buffers are allocated once and reused:
/// the report's "buffer_growths" gauge stays flat in steady state.
///
/// A block whose expert actor is down or late ([engine] expert_timeout_ms) fails over to a
/// spillway with a fresh copy; only if that fails too is the half given up, its utterances
/// reported lost to their channels (logits_chunk::error); other streams go on.
///
/// Messages:
///   (shards_atom, std::vector<block_sink_actor> experts, std::vector<spillway_actor_type> spillways)
///                                       the shard handles, typed (actors/actor_types.hpp), at
///                                       start and after a restart
///   (features_atom, feature_chunk)      from a channel (the sender is the channel actor); an
///                                       utterance's first chunk may carry its decoder
///                                       (feature_chunk::decoder, lane decoding): the utterance
///                                       is then decoded here after each step and the channel
///                                       gets logits_chunks with `decoded` set (text, words)
///                                       instead of logits
///   (drop_atom, channel_id)             forget a channel's streams
///   (flush_atom), (report_atom)         timers

#include <caf/all.hpp>

#include <memory>

#include "actors/actor_types.hpp"
#include "actors/engine_resources.hpp"

namespace sluice::actors {

/// Typed (compute_actor_type): the messages above are the only ones it takes, checked where they
/// are sent.
compute_actor_type::behavior_type batcher_actor(compute_actor_type::pointer self,
                                                std::shared_ptr<const engine_resources> res, metrics_actor_type metrics,
                                                supervisor_actor_type supervisor);

/// The same actor as lane `index` ([engine] lanes > 0): it speaks the same protocol to its
/// channels, but runs every routed expert itself, right after each layer's dense part
/// (moe::local_experts), in one micro-batch per step (no halves, no token blocks, no shards
/// message needed). Results equal the batcher's. Reports as "lane/<index>", kind "batcher".
/// Spawned detached (its own thread), it names that thread "sluice-lane-<index>" and pins it to
/// `cpu` when `cpu` >= 0 ([engine] pin_lanes, actors/cpu_affinity.hpp's lane_cpu); a pin the OS
/// refuses is a warning and the lane runs unpinned.
compute_actor_type::behavior_type lane_actor(compute_actor_type::pointer self, std::shared_ptr<const engine_resources> res,
                                             metrics_actor_type metrics, supervisor_actor_type supervisor, int32_t index,
                                             int32_t cpu);

}  // namespace sluice::actors
