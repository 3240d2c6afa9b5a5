#pragma once
/// The session description of an RTSP stream (RFC 2326 C, RFC 4566): what an ANNOUNCE carries
/// (a push) or a DESCRIBE returns (a pull). For each m=audio line: the codec sluice takes
/// (PCMU, PCMA, G.722, L16 mono or stereo at 8-48 kHz, Opus decoded at 16 kHz) and its control URL (a=control, made
/// absolute against the base URL). Other media (video) are listed but not taken. Pure over
/// untrusted text: errors name the problem.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "net/sip/sdp_offer.hpp"

namespace sluice::net::rtsp {

enum class rtsp_codec { pcmu, pcma, g722, l16, opus };

/// "PCMU", "PCMA", "G722", "L16", "opus".
const char* codec_name(rtsp_codec c);

struct rtsp_media {
  bool taken = false;        ///< audio with a codec sluice decodes
  std::string kind;          ///< "audio", "video", ...
  rtsp_codec codec = rtsp_codec::pcmu;
  uint8_t payload_type = 0;
  int clock_rate = 8000;     ///< RTP timestamp units per second
  int sample_rate = 8000;    ///< decoded audio (Hz)
  int channels = 1;          ///< interleaved channels in the payload (L16); mixed down to one
  std::string control;       ///< absolute control URL of this stream
};

struct rtsp_description {
  std::vector<rtsp_media> media;
  std::size_t taken() const;
};

/// Parses `sdp`; `base` is the URL relative controls resolve against (Content-Base, or the
/// request URL). errc::corrupt for text that is not SDP, errc::unsupported when no audio
/// stream has a codec sluice takes, errc::limit_exceeded past `max_media` m= lines.
result<rtsp_description> parse_description(std::string_view sdp, const std::string& base, std::size_t max_media);

/// The codec as the SIP RTP decoder knows it (PCMU, PCMA, G.722, Opus; not L16).
sip::codec_choice sip_codec_of(const rtsp_media& m);

/// Whether `url` names the stream whose control URL is `control` (exact, or with/without a
/// trailing slash).
bool same_url(std::string_view url, std::string_view control);

/// The path of an rtsp:// URL ("/name" of rtsp://host:port/name), "" when it has none.
std::string url_path(std::string_view url);

}  // namespace sluice::net::rtsp
