#pragma once
/// The RTSP Transport header (RFC 2326 12.39): which of the offered transports sluice takes and
/// the value that confirms it. Taken: RTP/AVP/TCP with `interleaved=a-b` (RTP on the RTSP
/// connection itself) and RTP/AVP[/UDP] unicast with `client_port=a-b`. Multicast and anything
/// else are not (461 Unsupported Transport). Pure functions over untrusted text.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::net::rtsp {

struct transport_spec {
  bool tcp = false;             ///< interleaved on the RTSP connection; else UDP unicast
  int rtp_channel = 0;          ///< tcp: interleaved RTP channel (RTCP is the next one)
  int rtcp_channel = 1;
  uint16_t client_rtp_port = 0;   ///< udp: the peer's RTP port
  uint16_t client_rtcp_port = 0;
  uint16_t server_rtp_port = 0;   ///< udp, in a reply: ours
  uint16_t server_rtcp_port = 0;  ///< udp, read from a reply (rendered as server_rtp_port + 1)
  bool record = false;          ///< mode=record (a push)
  std::string ssrc;             ///< as given, echoed
};

/// The first transport of a comma-separated Transport value that sluice takes, nullopt if none.
std::optional<transport_spec> choose_transport(std::string_view value);

/// Parses one transport (the pull client reads the server's reply with it); nullopt if not
/// RTP/AVP unicast with the parameters its lower transport needs.
std::optional<transport_spec> parse_transport(std::string_view one);

/// The Transport value of a reply (or of a client's SETUP, with server_rtp_port 0).
std::string render_transport(const transport_spec& t);

}  // namespace sluice::net::rtsp
