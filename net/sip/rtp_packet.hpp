#pragma once
/// RTP (RFC 3550) and RFC 4733 telephone-event parsing: pure functions over untrusted bytes.
/// Nothing here allocates; views point into the caller's buffer.

#include <cstdint>
#include <optional>
#include <span>

namespace sluice::net::sip {

/// One RTP packet's header fields and its payload (a view into the parsed buffer).
struct rtp_packet {
  uint8_t payload_type = 0;
  bool marker = false;
  uint16_t seq = 0;
  uint32_t timestamp = 0;  ///< in units of the payload type's clock
  uint32_t ssrc = 0;
  std::span<const uint8_t> payload;  ///< CSRCs, extension and padding removed
};

/// Parses one datagram as RTP version 2. nullopt for anything else: too short, another
/// version, CSRC/extension/padding lengths that run past the end, or an RTCP packet
/// (payload type 72-76 with the marker bit, RFC 5761 4), which share the port when muxed.
std::optional<rtp_packet> parse_rtp(std::span<const uint8_t> datagram);

/// An RFC 4733 named telephone event (DTMF digit 0-15, ...).
struct telephone_event {
  uint8_t event = 0;   ///< 0-9 digits, 10 '*', 11 '#', 12-15 'A'-'D'
  bool end = false;    ///< the E bit: the event has ended
  uint8_t volume = 0;  ///< dBm0 below 0, 0-63
  uint16_t duration = 0;  ///< in timestamp units since the event's timestamp
};

/// Parses an RFC 4733 payload (the first 4-byte block; redundant blocks are ignored).
std::optional<telephone_event> parse_telephone_event(std::span<const uint8_t> payload);

/// The character of a DTMF event ('0'-'9', '*', '#', 'A'-'D'), or 0 for other events.
char dtmf_char(uint8_t event);

}  // namespace sluice::net::sip
