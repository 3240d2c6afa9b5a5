#pragma once
/// Uncompressed sample encodings and the conversion of interleaved sample bytes to planar float.
/// Used by the WAV reader and for raw streams whose format the caller states (WebSocket, RTP).
/// Pure functions: safe from any thread.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "dsp/audio.hpp"

namespace sluice::dsp {

/// How one sample is stored. All multi-byte encodings are little-endian and signed, except
/// `pcm_u8` (unsigned, 128 = silence, as WAV stores 8-bit PCM).
enum class sample_encoding {
  pcm_u8,
  pcm_s16le,
  pcm_s24le,  ///< three bytes per sample, packed
  pcm_s32le,
  pcm_f32le,  ///< IEEE-754 binary32
  pcm_f64le,  ///< IEEE-754 binary64
  mulaw,      ///< G.711 μ-law, one byte per sample
  alaw,       ///< G.711 A-law, one byte per sample
};

/// The codec name reported to users ("pcm_s16le", "mulaw", ...), as ffmpeg spells them.
const char* to_string(sample_encoding e);

/// Bytes one sample occupies (1 to 8).
std::size_t bytes_per_sample(sample_encoding e);

/// Sample rates accepted anywhere audio enters sluice, in Hz. Below the minimum no speech band
/// survives; above the maximum the header is almost certainly garbage.
inline constexpr int min_sample_rate = 1000;
inline constexpr int max_sample_rate = 768000;

/// The most channels accepted from any container or stream description.
inline constexpr int max_channels = 256;

/// Checks `sample_rate` and `channels` against the limits above; `what` prefixes the message
/// ("wav", "raw"). Zero or negative values are errc::corrupt, out-of-range ones
/// errc::unsupported.
result<void> check_stream_shape(const char* what, long long sample_rate, long long channels);

/// Converts interleaved frames to planar float in [-1, 1]: integer PCM is scaled by 2^-(bits-1),
/// G.711 is expanded, floats are clamped to [-1, 1] and NaN becomes 0.
/// `bytes.size()` must be a whole number of frames (channels * bytes_per_sample); otherwise
/// errc::truncated says how many bytes are left over. `channels` must be in [1, max_channels].
/// Returns f32 [channels][bytes.size() / frame_bytes].
result<std::vector<std::vector<float>>> deinterleave(std::span<const uint8_t> bytes,
                                                     sample_encoding encoding, int channels);

/// A raw byte stream the caller describes (nothing in the bytes says what they are).
struct raw_format {
  sample_encoding encoding = sample_encoding::pcm_s16le;
  int sample_rate = 0;  ///< Hz
  int channels = 1;     ///< interleaved frame by frame
};

/// Decodes a raw interleaved stream to planar audio at `format.sample_rate`. Channels are split
/// apart, never mixed. Errors: a rate or channel count out of range (errc::invalid_argument),
/// or a partial final frame (errc::truncated).
result<audio> decode_raw(std::span<const uint8_t> bytes, const raw_format& format);

}  // namespace sluice::dsp
