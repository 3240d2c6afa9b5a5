#pragma once
/// How far a channel's recognizer has got with the audio it was given: what lets a network
/// session hold a fast sender back (flow control) instead of queueing its audio without bound.
///
/// Protocol (in process; plain integers, nothing to register):
///   subscriber -> channel: (progress_atom)  from now on, report progress to the subscriber
///   channel -> subscriber: (progress_atom, uint64_t taken, int64_t pending_ms, bool caught_up)
///     taken       audio and samples messages the channel has handled so far (each one counts,
///                 a message that could not be decoded too), so the subscriber knows which of
///                 those it sent are still in the channel's mailbox;
///     pending_ms  audio the channel has taken in that the recognizer has not finished with
///                 yet (ms taken in, counted at the channel's input rate, minus the point the
///                 logits have covered): audio in the resampler, features queued at the
///                 batcher, the part of an attention chunk not computed yet.
///     caught_up   the recognizer has made all it can of that audio: every utterance has its
///                 final but the open one, and the open one has its logits (so its partial) for
///                 every whole attention chunk the audio taken makes; what pending_ms still
///                 counts waits for more audio (or the end). What lets a lock-step client (Vosk's)
///                 be answered with the partial of the audio it sent rather than an older one.
/// A report follows an audio message once 100 ms more audio came in since the last report, or
/// when the channel's mailbox is empty after it or after a later message that is not audio (so
/// an idle channel's last report is exact and counts every message it has taken),
/// and every logits chunk that moves the recognized point or makes it caught up. Reports stop
/// when the channel stops.

#include <caf/all.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "actors/messages.hpp"  // progress_atom

namespace sluice::actors {

/// The duration in microseconds of one audio message of a channel opened with `codec`
/// ("pcm_s16le", "mulaw", "alaw", "opus") at `sample_rate` Hz, mono, from its size (an Opus
/// packet from its table of contents). nullopt when it cannot be told (an empty or malformed
/// Opus packet, an unknown codec).
std::optional<int64_t> audio_message_us(const std::string& codec, int sample_rate, std::span<const uint8_t> bytes);

/// The same for `samples` f32 samples (codec "f32").
inline int64_t samples_message_us(std::size_t samples, int sample_rate) {
  return sample_rate > 0 ? static_cast<int64_t>(samples) * 1'000'000 / sample_rate : 0;
}

}  // namespace sluice::actors
