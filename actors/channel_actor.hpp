#pragma once
/// channel_actor: one per audio channel (a stereo call is two). Runs the channel_pipeline on
/// incoming audio, cuts it into utterances with the endpointer, streams each utterance's fbank
/// frames to a lane (or the batcher), and turns the logits that come back into partial and final
/// results (CTC prefix beam search with the word LM and the channel's hotwords) for its
/// subscriber. With lane decoding ([engine] lane_decoding, lanes only) an offline utterance's
/// decoder goes to its lane with the first features and the results come back decoded; the
/// channel post-processes and orders them as its own.
///
/// Messages in:
///   (samples_atom, std::vector<float>)      f32 samples at the channel's rate (codec f32)
///   (audio_atom, std::vector<uint8_t>)      encoded audio in the channel's codec
///   (segment_atom, std::vector<float>, i64)  one utterance, 16 kHz, starting at that sample
///                                            (files: the engine's offline path)
///   (end_atom)                               no more audio: finish every utterance, then stop
///   (abort_atom)                             the subscriber is gone: stop at once; utterances
///                                            in flight are dropped (the batcher forgets them
///                                            when the channel goes down) and no drained_atom
///                                            is sent
///   (logits_atom, logits_chunk)              from the batcher
///   (batcher_atom, i32 index, caf::actor_addr dead)  slot `index` of the lane_set (the
///                                            batcher: 0) lost actor `dead` and was refilled:
///                                            utterances in flight on it are reported lost, the
///                                            channel goes on
///   (progress_atom)                          report progress to the subscriber from now on
///                                            (flow control: actors/channel_progress.hpp)
/// Each utterance is placed when it starts, on the lane of `lanes` with the least work outstanding
/// (lane_set.hpp), and its features all go there: one channel's utterances can run on every lane.
/// Messages out: (transcript_event) to the subscriber; after end_atom, once every utterance
/// has its final, (drained_atom, channel_id) to the subscriber and the supervisor; once asked,
/// (progress_atom, uint64_t taken, int64_t pending_ms, bool caught_up) to the subscriber.
/// Its reports to the metrics actor carry the newest text and `tenant` (net/ shows a channel
/// only to its tenant).
/// Bad audio gets a transcript_event with `error` set; the channel keeps running.

#include <caf/all.hpp>

#include <memory>

#include "actors/actor_types.hpp"
#include "actors/channel_pipeline.hpp"
#include "actors/engine_resources.hpp"
#include "actors/lane_set.hpp"

namespace sluice::actors {

/// Typed (channel_actor_type, actors/messages.hpp): the messages above are checked where they
/// are sent.
channel_actor_type::behavior_type channel_actor(channel_actor_type::pointer self, std::shared_ptr<const engine_resources> res,
                            channel_id id, std::shared_ptr<channel_pipeline> pipeline, bool partials,
                            std::string tenant, caf::actor subscriber, std::shared_ptr<lane_set> lanes,
                            metrics_actor_type metrics, supervisor_actor_type supervisor);

}  // namespace sluice::actors
