#pragma once
/// Streaming Opus decoding, one packet at a time (RTP payloads, WebSocket frames), with libopus.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "dsp/audio.hpp"

struct OpusDecoder;  // libopus's decoder state; only opus_decoder.cpp sees its definition

namespace sluice::dsp {

/// The decoder state of one Opus stream. Owns its libopus state; movable, not copyable; one
/// thread at a time (the channel actor that owns the stream). A moved-from decoder may only be
/// assigned to or destroyed.
class opus_decoder {
 public:
  /// The output rates libopus decodes to directly, in Hz.
  static constexpr int supported_rates[] = {8000, 12000, 16000, 24000, 48000};
  /// A plain Opus stream carries one or two channels (more need the multistream API).
  static constexpr int max_channels = 2;
  /// What an empty packet conceals before any packet has been decoded, in milliseconds.
  static constexpr int default_conceal_ms = 20;

  /// Makes a decoder that outputs `channels` channels at `sample_rate`; either may differ from
  /// what the encoder used (libopus converts). Errors: errc::invalid_argument for a rate not in
  /// supported_rates or channels outside [1, max_channels]; errc::internal if libopus fails.
  static result<opus_decoder> create(int sample_rate, int channels);

  opus_decoder(opus_decoder&&) noexcept = default;
  opus_decoder& operator=(opus_decoder&&) noexcept = default;
  ~opus_decoder() = default;

  /// Decodes one packet to planar float in [-1, 1] at sample_rate(): f32 [channels][n], where n
  /// is the packet's duration (2.5 to 120 ms of samples). Stereo packets are decoded to two
  /// separate channels, never mixed.
  /// An empty packet means "this packet was lost": the decoder conceals it (packet loss
  /// concealment) with as many samples as the last packet had, default_conceal_ms before any.
  /// A malformed packet is errc::corrupt and leaves the decoder state as it was.
  result<audio> decode(std::span<const uint8_t> packet);

  /// The duration of `packet` in samples at `sample_rate` Hz, read from its table of contents
  /// (no decoding); 0 for an empty or malformed packet.
  static int64_t packet_samples(std::span<const uint8_t> packet, int sample_rate);

  /// Forgets the stream history, as after a discontinuity (new SSRC, seek).
  void reset();

  int sample_rate() const { return sample_rate_; }
  int channels() const { return channels_; }

 private:
  struct state_deleter {
    void operator()(OpusDecoder* state) const;
  };

  opus_decoder(std::unique_ptr<OpusDecoder, state_deleter> state, int sample_rate, int channels);

  std::unique_ptr<OpusDecoder, state_deleter> state_;
  int sample_rate_ = 0;
  int channels_ = 0;
  std::vector<float> interleaved_;  // f32 [max_frame_samples * channels], reused per packet
};

}  // namespace sluice::dsp
