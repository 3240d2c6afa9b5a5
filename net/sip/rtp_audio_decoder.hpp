#pragma once
/// Turns what the jitter buffer releases into 16-bit PCM at the codec's rate: G.711 through
/// dsp/g711, G.722 through spandsp's decoder, Opus through libopus (its own concealment for
/// losses); lost packets concealed with spandsp's packet loss
/// concealment (pitch-period repetition fading to silence, after ITU-T G.711 Appendix I), gaps
/// without a loss (DTX) as silence, or, after an RFC 3389 comfort noise packet, as white noise at
/// the level it gives (no spectrum: the recogniser needs the pause, not its colour). One per RTP
/// stream; not thread-safe.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "net/sip/jitter_buffer.hpp"
#include "net/sip/sdp_offer.hpp"

namespace sluice::net::sip {

/// Timestamp units of audio in one packet's payload of `codec`: one per byte for G.711 and for
/// G.722 (two 16 kHz samples per byte on its 8 kHz clock); Opus says in its TOC byte (units of its
/// 48 kHz clock), 0 for a payload that is not an Opus packet.
uint32_t rtp_packet_duration(const codec_choice& codec, std::span<const uint8_t> payload);

class rtp_audio_decoder {
 public:
  explicit rtp_audio_decoder(codec_choice codec);
  ~rtp_audio_decoder();
  rtp_audio_decoder(const rtp_audio_decoder&) = delete;
  rtp_audio_decoder& operator=(const rtp_audio_decoder&) = delete;

  /// Appends the item's audio to `out` (samples at codec().sample_rate). Packets of another
  /// payload type than the codec's add nothing.
  void decode(const playout_item& item, std::vector<int16_t>& out);
  const codec_choice& codec() const { return codec_; }
  uint64_t concealed_samples() const { return concealed_; }
  /// Samples filled with comfort noise.
  uint64_t comfort_noise_samples() const { return comfort_noise_; }

 private:
  struct spandsp_state;  // spandsp's PLC and G.722 states (its headers stay out of ours)
  codec_choice codec_;
  std::unique_ptr<spandsp_state> dsp_;
  uint64_t concealed_ = 0;
  uint64_t comfort_noise_ = 0;
  // After a CN packet until the next audio packet: the noise's amplitude (0: silence).
  double noise_amplitude_ = 0;
  uint32_t noise_state_ = 1;  // the noise generator's state
};

}  // namespace sluice::net::sip
