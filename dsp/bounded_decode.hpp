#pragma once
/// Decoding an untrusted file (an upload) with its cost known before any sample is decoded and
/// bounded while it is: the headers are read first (probe_upload) so a caller can refuse a file
/// that is too long or has too many channels; decode_bounded then decodes a piece at a time
/// straight to the model's rate, so the file's own rate (48 kHz for every Opus file) is never
/// held whole, and stops at a frame budget whatever the headers claimed.
/// Pure functions of their input: safe from any thread.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "config/error.hpp"
#include "dsp/audio.hpp"
#include "dsp/audio_file.hpp"
#include "dsp/pcm.hpp"
#include "dsp/resampler.hpp"

namespace sluice::dsp {

/// What the headers of a WAV or Ogg Opus file (`raw` unset) or of a headerless body described by
/// `raw` say: channels, rate, frames, duration. Decodes nothing: WAV reads the chunk list and
/// fmt (data size / block align), raw divides the size by the frame size, Ogg Opus walks the
/// pages once and takes the length from the granule positions. container is "raw" for raw
/// bodies. Errors: decode_audio_bytes's for files; for raw bodies decode_raw's (a bad rate or
/// channel count is errc::invalid_argument, a partial final frame errc::truncated).
result<audio_info> probe_upload(std::span<const uint8_t> bytes, const std::optional<raw_format>& raw);

/// Decodes what probe_upload described and resamples every channel to `output_rate`, one piece
/// (at most a second of input) at a time. Holds at most the output (f32 [channels][frames at
/// output_rate]) plus one piece. Stops with errc::limit_exceeded once more than
/// `max_input_frames` frames (per channel, at the file's rate) have been decoded: an Ogg file's
/// granule positions may claim less than its packets hold. Other errors: probe_upload's, the
/// decoders' and the resampler's.
result<audio> decode_bounded(std::span<const uint8_t> bytes, const std::optional<raw_format>& raw,
                             std::size_t max_input_frames, resample_quality quality,
                             int output_rate = model_sample_rate);

}  // namespace sluice::dsp
