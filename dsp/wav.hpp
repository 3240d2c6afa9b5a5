#pragma once
/// WAV files (RIFF/WAVE, and RF64/BW64 for files over 4 GiB) held in memory.
///
/// Handles PCM 8/16/24/32-bit, IEEE float 32/64-bit, G.711 μ-law (tag 7) and A-law (tag 6), each
/// also inside WAVE_FORMAT_EXTENSIBLE (0xFFFE with a standard subformat GUID); any number of
/// channels up to max_channels, each kept apart. Unknown chunks (LIST, fact, cue, ...) are
/// skipped, odd-sized chunks are followed by their pad byte. The RIFF size field is ignored:
/// writers get it wrong too often to be useful.
///
/// Errors name the problem: not RIFF or not WAVE, missing fmt or data (errc::corrupt); a chunk or
/// the data running past the end of the input, with the bytes announced and present, or a file
/// ending inside a chunk header (errc::truncated); zero channels, block_align not matching
/// channels and sample size, data not a whole number of frames (errc::corrupt); format tags,
/// sample sizes or rates we do not handle, with the tag number (errc::unsupported). No input makes
/// the reader read out of bounds. Pure functions of their input: safe from any thread.

#include <cstddef>
#include <cstdint>
#include <span>

#include "config/error.hpp"
#include "dsp/audio.hpp"
#include "dsp/pcm.hpp"

namespace sluice::dsp {

/// A data chunk size of 0xFFFFFFFF in a plain RIFF file is the streaming writers' way of saying
/// "length unknown" (the header was written before the length was): the data then runs to the
/// end of the input, cut down to whole frames.
inline constexpr uint32_t wav_unknown_data_size = 0xFFFFFFFFu;

/// What the header says and where the samples are; nothing is decoded.
struct wav_layout {
  bool rf64 = false;        ///< RF64 or BW64 container (sizes in the ds64 chunk)
  bool extensible = false;  ///< fmt was WAVE_FORMAT_EXTENSIBLE
  uint16_t format_tag = 0;  ///< the effective tag: the subformat's for extensible files
  sample_encoding encoding = sample_encoding::pcm_s16le;
  int sample_rate = 0;  ///< Hz
  int channels = 0;
  std::size_t block_align = 0;  ///< bytes per frame (all channels)
  std::size_t data_offset = 0;  ///< byte offset of the first sample in the input
  std::size_t data_size = 0;    ///< bytes of samples, a whole number of frames

  /// Frames (samples per channel) in the data chunk.
  std::size_t num_frames() const { return block_align ? data_size / block_align : 0; }
};

/// Walks the chunks and reads fmt; checks everything decode_wav needs.
result<wav_layout> parse_wav(std::span<const uint8_t> bytes);

/// Decodes a whole WAV file to planar float at the file's own sample rate.
result<audio> decode_wav(std::span<const uint8_t> bytes);

}  // namespace sluice::dsp
