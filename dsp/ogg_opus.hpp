#pragma once
/// Whole Ogg Opus files (.opus, as opusenc, ffmpeg and browsers' MediaRecorder write them) held in
/// memory, decoded with libopusfile. Pure functions of their input: safe from any thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "dsp/audio.hpp"

struct OggOpusFile;  // libopusfile's handle; opusfile.h stays out of our headers

namespace sluice::dsp {

/// Opus always decodes at 48 kHz, whatever rate the encoder's input had.
inline constexpr int ogg_opus_sample_rate = 48000;

/// The longest stream decoded, in seconds, so a small hostile file cannot claim hours of audio
/// and exhaust memory (Opus can code 120 ms in a couple of bytes).
inline constexpr int ogg_opus_max_duration_s = 4 * 3600;

/// The most logical streams (distinct serial numbers, multiplexed or chained) one file may hold.
/// A call recording has one per chained link; thousands are an attack on whoever keeps per-stream
/// state, so a file with more is refused at the first page past the limit.
inline constexpr std::size_t ogg_max_logical_streams = 1024;

/// What the headers say about an Ogg Opus file.
struct ogg_opus_info {
  int channels = 0;           ///< output channels, the same in every chained link
  uint64_t num_samples = 0;   ///< per channel at 48 kHz, after pre-skip and end trimming
  int input_sample_rate = 0;  ///< the encoder's input rate in Hz (informational; 0 if unknown)
};

/// Checks the page structure (one pass over the pages, linear in the file's size whatever the
/// number of logical streams) and opens the Opus headers; decodes nothing. The length comes from
/// the granule positions, not from decoding, so it is what the file claims.
/// Errors: errc::truncated when the file ends inside a page or has no end-of-stream page;
/// errc::corrupt for bytes that are not Ogg pages, malformed headers or damaged pages;
/// errc::unsupported for Ogg files holding another codec (Vorbis, FLAC, Speex), chained links
/// whose channel counts differ, or more than ogg_max_logical_streams logical streams.
result<ogg_opus_info> probe_ogg_opus(std::span<const uint8_t> bytes);

/// Decodes the whole file to planar float at 48 kHz, each channel kept apart (Vorbis channel
/// order for more than two). Errors as probe_ogg_opus, plus errc::corrupt for a packet that does
/// not decode or a hole (missing or damaged pages) in the stream.
result<audio> decode_ogg_opus(std::span<const uint8_t> bytes);

/// Decodes an Ogg Opus file a piece at a time, so a caller can bound what it holds (a header may
/// claim less than the packets decode to). Reads from `bytes`, which must outlive the reader.
/// Not thread-safe; movable.
class ogg_opus_reader {
 public:
  /// Checks and opens the file as probe_ogg_opus does; same errors.
  static result<ogg_opus_reader> open(std::span<const uint8_t> bytes);
  ~ogg_opus_reader();
  ogg_opus_reader(ogg_opus_reader&&) noexcept;
  ogg_opus_reader& operator=(ogg_opus_reader&&) noexcept;

  const ogg_opus_info& info() const { return info_; }
  /// Replaces `out` with the next piece: f32 [channels][n] at 48 kHz, n at most one Opus frame
  /// (120 ms). Returns n; 0 at the end of the stream. errc::corrupt when a packet does not decode
  /// or pages are missing.
  result<std::size_t> read(std::vector<std::vector<float>>& out);

 private:
  struct file_closer {
    void operator()(::OggOpusFile* of) const;
  };
  ogg_opus_reader() = default;
  std::unique_ptr<::OggOpusFile, file_closer> file_;
  ogg_opus_info info_;
  std::vector<float> interleaved_;  // f32 [max frame, channels]: op_read_float's output
  std::size_t samples_read_ = 0;
};

}  // namespace sluice::dsp
