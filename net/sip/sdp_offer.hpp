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
///
/// SRTP (RFC 3711) with keys in the SDP (SDES, RFC 4568): an RTP/SAVP stream, or an RTP/AVP one
/// that carries a=crypto lines (best-effort SRTP, as baresip's "srtp" and some SBCs offer), is
/// taken encrypted with the first a=crypto line whose suite sluice takes, in the offer's order:
/// AES_CM_128_HMAC_SHA1_80 and _32 (RFC 4568), AES_256_CM_HMAC_SHA1_80 and _32 (RFC 6188),
/// AEAD_AES_128_GCM and AEAD_AES_256_GCM (RFC 7714). The answer carries that line's tag and
/// suite with a key of ours (each direction has its own key). Lines with an MKI, several master
/// keys or session parameters (other than the WSH window hint) are passed over; a key lifetime
/// is accepted (the peer re-keys by re-INVITE when it runs out, which sluice follows).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace sluice::net::sip {

enum class audio_codec { pcmu, pcma, g722, opus };

enum class srtp_suite { aes_cm_128_hmac_sha1_80, aes_cm_128_hmac_sha1_32, aes_256_cm_hmac_sha1_80,
                        aes_256_cm_hmac_sha1_32, aead_aes_128_gcm, aead_aes_256_gcm };

/// The suite's name in SDP ("AES_CM_128_HMAC_SHA1_80", ...).
const char* suite_name(srtp_suite s);
/// Bytes of the master key and master salt together (the inline key's length): 30, 46, 28 or 44.
std::size_t suite_key_bytes(srtp_suite s);

/// One a=crypto line (RFC 4568 9.1): its tag, suite and master key || master salt.
struct sdes_crypto {
  uint32_t tag = 0;
  srtp_suite suite = srtp_suite::aes_cm_128_hmac_sha1_80;
  std::vector<uint8_t> key;
};

/// The value of an a=crypto attribute ("1 AES_CM_128_HMAC_SHA1_80 inline:<base64>[|lifetime]").
/// errc::unsupported: a suite, MKI, several keys or a session parameter sluice does not take (the
/// offer may hold another line); errc::corrupt: not the grammar of RFC 4568 9.1, or a key of
/// the wrong length for its suite.
result<sdes_crypto> parse_crypto(std::string_view value);
/// "<tag> <suite> inline:<base64 key>".
std::string render_crypto(const sdes_crypto& c);

/// SRTP in offers: "off" takes plain RTP only (RTP/SAVP streams are refused, a=crypto lines on
/// RTP/AVP ignored); "allow" takes either; "require" refuses streams without a usable a=crypto.
enum class srtp_mode { off, allow, require };

struct offer_policy {
  srtp_mode srtp = srtp_mode::allow;
  /// The offer came over signalling that hides its keys (SIP over TLS), or the operator allows
  /// SDES over plain SIP ([sip] srtp_plain_signalling). Without it, RTP/SAVP streams are refused
  /// and a=crypto lines on RTP/AVP are ignored (answered as plain RTP), as RFC 4568 8.3 asks.
  bool keys_allowed = true;
};

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
  std::string proto = "RTP/AVP";  ///< the offered transport, answered the same
  /// SRTP: the offer's a=crypto line taken (the peer's key, for what it sends) and ours for the
  /// answer (local_crypto.key empty until choose_local_keys).
  bool secure = false;
  sdes_crypto remote_crypto;
  sdes_crypto local_crypto;
};

struct sdp_offer {
  std::vector<offered_stream> streams;
  /// Accepted streams.
  std::size_t accepted() const;
};

/// Parses an offer. errc::corrupt: not SDP (the message says where); errc::unsupported: no
/// audio stream has a codec we take (answer 488); errc::limit_exceeded: more than
/// `max_streams` m= lines.
/// errc::unsupported also when the policy refuses every stream (the message says which rule).
result<sdp_offer> parse_offer(std::string_view text, std::size_t max_streams, offer_policy policy = {});

/// Gives every secure accepted stream a key of ours for the answer, of its suite's length, from
/// OpenSSL's random generator, with the offer's tag; a stream of `previous` (the dialog's last
/// offer, the same accepted streams in order) with the same suite keeps its key. errc::internal
/// when the generator fails.
result<void> choose_local_keys(sdp_offer& offer, const sdp_offer* previous = nullptr);

/// The answer to `offer`: one m= line per offered line, in order; accepted streams on the
/// given local port (`ports` has one entry per accepted stream, in order) with the chosen codec
/// (and telephone-event when offered), direction recvonly (inactive if the peer does not send);
/// secure streams on the offered transport with an a=crypto line of local_crypto;
/// refused ones with port 0. `session_version` goes up with every new answer in a dialog.
std::string render_answer(const sdp_offer& offer, const std::string& local_address, std::span<const uint16_t> ports,
                          uint64_t session_id, uint64_t session_version);

}  // namespace sluice::net::sip
