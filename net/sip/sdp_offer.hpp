#pragma once
/// SDP offer/answer (RFC 3264) for a receive-only audio peer: which offered audio streams sluice
/// takes, with which codec, and the answer that says so. Parsing is sofia-sip's (sdp_parse); this
/// is the choice and the answer's text. Pure functions over untrusted text: a malformed offer is
/// an error value naming the problem, never an exception or a crash.
///
/// Codecs taken, in order of preference (better audio for recognition first, not the offer's
/// order): Opus (RFC 7587: opus/48000/2, a dynamic payload type, a 48 kHz RTP clock whatever the
/// audio; decoded mono at 16 kHz), G.722 (payload type 9, 16 kHz audio on an 8 kHz RTP clock),
/// PCMU (0), PCMA (8).
/// RFC 4733 telephone-event at 8 kHz is accepted alongside for DTMF, and RFC 3389 comfort noise
/// (CN/8000, static payload type 13) so that a peer using silence suppression may send it.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace sluice::net::sip {

enum class audio_codec { pcmu, pcma, g722, opus };

/// "PCMU", "PCMA", "G722", "opus".
const char* codec_name(audio_codec c);

struct codec_choice {
  audio_codec codec = audio_codec::pcmu;
  uint8_t payload_type = 0;
  int clock_rate = 8000;   ///< RTP timestamp units per second
  int sample_rate = 8000;  ///< decoded audio (Hz)
  int comfort_noise_pt = -1;  ///< RFC 3389 CN at the codec's 8 kHz clock, when offered; -1: none
};

/// One m= line of the offer and what the answer does with it.
struct offered_stream {
  int index = 0;           ///< the m= line's position (0-based); the answer keeps every line
  bool accepted = false;   ///< an audio stream over RTP/AVP with a codec we take
  std::string media_line;  ///< "audio 4000 RTP/AVP 0 8" etc., echoed with port 0 when refused
  codec_choice codec;
  int telephone_event_pt = -1;  ///< -1: not offered (or not at 8 kHz)
  std::string remote_address;   ///< c= of the stream (or of the session)
  uint16_t remote_port = 0;
  std::string label;            ///< a=label (RFC 4574), used by SIPREC to name streams
  bool peer_sends = true;       ///< sendrecv or sendonly; false: recvonly or inactive
  bool rtcp_mux = false;        ///< a=rtcp-mux (RFC 5761): RTCP shares the RTP port (answered so)
  uint16_t rtcp_port = 0;       ///< a=rtcp (RFC 3605) port; 0: the RTP port + 1
};

struct sdp_offer {
  std::vector<offered_stream> streams;
  /// Accepted streams.
  std::size_t accepted() const;
};

/// Parses an offer. errc::corrupt: not SDP (the message says where); errc::unsupported: no
/// audio stream has a codec we take (answer 488); errc::limit_exceeded: more than
/// `max_streams` m= lines.
result<sdp_offer> parse_offer(std::string_view text, std::size_t max_streams);

/// The answer to `offer`: one m= line per offered line, in order; accepted streams on the
/// given local port (`ports` has one entry per accepted stream, in order) with the chosen codec
/// (and telephone-event when offered), direction recvonly (inactive if the peer does not send);
/// refused ones with port 0. `session_version` goes up with every new answer in a dialog.
std::string render_answer(const sdp_offer& offer, const std::string& local_address, std::span<const uint16_t> ports,
                          uint64_t session_id, uint64_t session_version);

}  // namespace sluice::net::sip
