#pragma once
/// The engine half of an upload: a file already decoded (dsp::file_speech) sent through
/// the engine, every channel a channel, as in `sluice transcribe`, and answered as one JSON
/// document once every channel has drained. upload_queue's workers start it.

#include <functional>

#include <caf/all.hpp>

#include "actors/actor_types.hpp"
#include "actors/upload_job.hpp"
#include "dsp/file_speech.hpp"

namespace sluice::actors {

/// The label of channel `c` of an `n`-channel upload: "mono" (1), "agent" and "customer" (2),
/// "channel <c>" (more).
std::string upload_channel_label(std::size_t c, std::size_t n);

/// Spawns the actor that opens a channel per channel of `speech` (16 kHz samples, not yet sliced:
/// dsp::front_end::samples) at `supervisor`, has each channel's segments sent as the VAD finds
/// them (feed_segments, `cfg`'s vad, segment and engine.offline_nice) and gathers the finals;
/// `done` gets 200 and the transcript, or 503 (with `retry_after_s`) when the engine refuses a
/// channel or does not answer. Every channel carries `tenant` (auth: who may read it) and
/// `hotwords`.
void start_transcription(caf::actor_system& sys, const supervisor_actor_type& supervisor, dsp::file_speech speech,
                         const config::sluice_config& cfg, std::function<void(upload_reply)> done, int retry_after_s,
                         std::string tenant = {}, upload_observer observer = {},
                         std::vector<std::string> hotwords = {});

}  // namespace sluice::actors
