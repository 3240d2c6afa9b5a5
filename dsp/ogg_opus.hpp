#pragma once
/// Whole Ogg Opus files (.opus, as opusenc, ffmpeg and browsers' MediaRecorder write them) held in
/// memory, decoded with libopusfile. Pure functions of their input: safe from any thread.

#include <cstdint>
#include <span>

#include "config/error.hpp"
#include "dsp/audio.hpp"

namespace sluice::dsp {

/// Opus always decodes at 48 kHz, whatever rate the encoder's input had.
inline constexpr int ogg_opus_sample_rate = 48000;

/// The longest stream decoded, in seconds, so a small hostile file cannot claim hours of audio
/// and exhaust memory (Opus can code 120 ms in a couple of bytes).
inline constexpr int ogg_opus_max_duration_s = 4 * 3600;

/// What the headers say about an Ogg Opus file.
struct ogg_opus_info {
  int channels = 0;           ///< output channels, the same in every chained link
  uint64_t num_samples = 0;   ///< per channel at 48 kHz, after pre-skip and end trimming
  int input_sample_rate = 0;  ///< the encoder's input rate in Hz (informational; 0 if unknown)
};

/// Checks the page structure and opens the Opus headers; decodes nothing.
/// Errors: errc::truncated when the file ends inside a page or has no end-of-stream page;
/// errc::corrupt for bytes that are not Ogg pages, malformed headers or damaged pages;
/// errc::unsupported for Ogg files holding another codec (Vorbis, FLAC, Speex) or chained links
/// whose channel counts differ.
result<ogg_opus_info> probe_ogg_opus(std::span<const uint8_t> bytes);

/// Decodes the whole file to planar float at 48 kHz, each channel kept apart (Vorbis channel
/// order for more than two). Errors as probe_ogg_opus, plus errc::corrupt for a packet that does
/// not decode or a hole (missing or damaged pages) in the stream.
result<audio> decode_ogg_opus(std::span<const uint8_t> bytes);

}  // namespace sluice::dsp
