#pragma once
/// The VAD and slicing of one file channel, run while its segments are being recognised: a
/// detached actor feeds the channel's 16 kHz samples to a dsp::segment_stream a second at a time
/// and sends the channel each segment the moment it is final, then end_atom. A long file's first
/// segments reach the lanes while the rest is still being analysed, instead of after the VAD of
/// the whole file (measured before this: 0.64 s of a 29-minute file's 2.3 s ran before its first
/// segment went out). The segments are exactly those of dsp::slice on the whole channel.
///
/// Offline work: the feeder's thread takes the engine's offline_nice, as offline channels do.

#include <vector>

#include <caf/all.hpp>

#include "actors/messages.hpp"
#include "config/error.hpp"
#include "config/vad_config.hpp"

namespace sluice::actors {

/// Starts feeding `channel` (a channel actor opened for a file) from `samples16k`. What the
/// channel is sent, in order: (segment_atom, samples, start_sample) per segment, then end_atom.
/// Should the channel terminate first (aborted, killed), the feeder stops within a second of
/// audio, sends nothing more and exits with exit_reason::user_shutdown (normal otherwise).
/// errc::invalid_config when a section is invalid (nothing is spawned or sent then).
/// `nice`: the feeder thread's nice value (0: left as it is).
result<caf::actor> feed_segments(caf::actor_system& sys, const channel_actor_type& channel, std::vector<float> samples16k,
                                 const config::vad_config& vad_cfg, const config::segment_config& segment_cfg,
                                 int nice = 0);

}  // namespace sluice::actors
