#include "net/sip/rtp_packet.hpp"

namespace sluice::net::sip {

namespace {
constexpr std::size_t fixed_header_bytes = 12;
constexpr std::size_t csrc_bytes = 4;
constexpr std::size_t extension_header_bytes = 4;
constexpr uint8_t rtp_version = 2;
// RFC 5761 4: RTCP packet types 200-204 read as marker + payload type 72-76.
constexpr uint8_t rtcp_pt_first = 72, rtcp_pt_last = 76;
constexpr std::size_t telephone_event_bytes = 4;
constexpr uint8_t dtmf_events = 16;

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 | p[3];
}
}  // namespace

std::optional<rtp_packet> parse_rtp(std::span<const uint8_t> d) {
  if (d.size() < fixed_header_bytes) return std::nullopt;
  const uint8_t b0 = d[0], b1 = d[1];
  if ((b0 >> 6) != rtp_version) return std::nullopt;
  const bool padding = b0 & 0x20, extension = b0 & 0x10;
  const std::size_t csrc_count = b0 & 0x0f;
  rtp_packet p;
  p.marker = b1 & 0x80;
  p.payload_type = b1 & 0x7f;
  if (p.marker && p.payload_type >= rtcp_pt_first && p.payload_type <= rtcp_pt_last) return std::nullopt;
  p.seq = be16(&d[2]);
  p.timestamp = be32(&d[4]);
  p.ssrc = be32(&d[8]);
  std::size_t off = fixed_header_bytes + csrc_count * csrc_bytes;
  if (off > d.size()) return std::nullopt;
  if (extension) {
    if (off + extension_header_bytes > d.size()) return std::nullopt;
    const std::size_t words = be16(&d[off + 2]);
    off += extension_header_bytes + words * 4;
    if (off > d.size()) return std::nullopt;
  }
  std::size_t end = d.size();
  if (padding) {
    const std::size_t pad = d[d.size() - 1];
    // The count includes itself, so 0 is malformed; it may not eat into the header.
    if (pad == 0 || pad > end - off) return std::nullopt;
    end -= pad;
  }
  p.payload = d.subspan(off, end - off);
  return p;
}

std::optional<telephone_event> parse_telephone_event(std::span<const uint8_t> payload) {
  if (payload.size() < telephone_event_bytes) return std::nullopt;
  telephone_event e;
  e.event = payload[0];
  e.end = payload[1] & 0x80;
  e.volume = payload[1] & 0x3f;
  e.duration = be16(&payload[2]);
  return e;
}

char dtmf_char(uint8_t event) {
  static constexpr char chars[dtmf_events + 1] = "0123456789*#ABCD";
  return event < dtmf_events ? chars[event] : 0;
}

}  // namespace sluice::net::sip
