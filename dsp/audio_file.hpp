#pragma once
/// Audio files of any container sluice reads, recognised from their first bytes, not their name:
/// RIFF/WAVE (and RF64/BW64) -> dsp/wav.hpp, OggS -> dsp/ogg_opus.hpp. Raw streams that carry no
/// header are described by the caller: see decode_raw in dsp/pcm.hpp. No state: safe from any
/// thread.

#include <cstdint>
#include <span>
#include <string>

#include "config/error.hpp"
#include "dsp/audio.hpp"
#include "dsp/pcm.hpp"

namespace sluice::dsp {

/// What a file holds, read from its headers without decoding the samples.
struct audio_info {
  std::string container;  ///< "wav" or "ogg-opus"
  std::string codec;      ///< "pcm_u8", "pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le",
                          ///< "pcm_f64le", "mulaw", "alaw" or "opus"
  int sample_rate = 0;    ///< Hz of the decoded audio (48000 for Opus)
  int channels = 0;
  uint64_t num_samples = 0;  ///< per channel, at sample_rate
  double duration_s = 0.0;
};

/// Decodes a whole file held in memory to planar float, channels kept apart, at the file's own
/// rate (48 kHz for Opus). Errors: errc::unsupported for containers we do not read (the message
/// says what the bytes look like: MP3, FLAC, ...), errc::truncated for empty or too-short input,
/// and whatever the container's decoder reports.
result<audio> decode_audio_bytes(std::span<const uint8_t> bytes);

/// Reads and decodes a file. errc::io, naming the path and the reason, when it cannot be read;
/// other errors are decode_audio_bytes's and do not repeat the path (the caller has it).
result<audio> decode_audio_file(const std::string& path);

/// Describes a file held in memory without decoding its samples.
result<audio_info> probe_audio_bytes(std::span<const uint8_t> bytes);

/// Describes a file without decoding its samples (the file is read into memory whole).
result<audio_info> probe_audio_file(const std::string& path);

}  // namespace sluice::dsp
