#pragma once
/// RTCP (RFC 3550 6): parsing the compound packets a sender sends (SR, RR, SDES, BYE) and
/// writing the receiver reports sluice sends back. Pure functions over untrusted bytes.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::net::sip {

/// One reception report block (RFC 3550 6.4.1).
struct rtcp_report_block {
  uint32_t ssrc = 0;              ///< the source reported on
  uint8_t fraction_lost = 0;      ///< lost since the last report, in 1/256
  int32_t cumulative_lost = 0;    ///< 24-bit signed: expected minus received since the start
  uint32_t highest_seq = 0;       ///< extended highest sequence number (cycles << 16 | seq)
  uint32_t jitter = 0;            ///< interarrival jitter, in RTP timestamp units
  uint32_t lsr = 0;               ///< middle 32 bits of the last SR's NTP time; 0: none yet
  uint32_t dlsr = 0;              ///< delay since that SR, in 1/65536 s; 0: none yet
};

/// A sender report's sender info (RFC 3550 6.4.1).
struct rtcp_sender_info {
  uint32_t ssrc = 0;
  uint64_t ntp = 0;  ///< NTP timestamp, 32.32 fixed point seconds
  uint32_t rtp_timestamp = 0;
  uint32_t packets = 0, octets = 0;
};

/// What one compound RTCP datagram says. Packet types other than SR, RR, SDES and BYE (APP,
/// feedback, XR) are skipped, counted in `other`.
struct rtcp_compound {
  std::optional<rtcp_sender_info> sender;   ///< the SR's sender info, if the compound has one
  uint32_t reporter_ssrc = 0;               ///< SSRC of the first SR or RR
  std::vector<rtcp_report_block> blocks;    ///< report blocks of every SR and RR
  std::vector<uint32_t> bye;                ///< SSRCs leaving (BYE)
  std::string bye_reason;
  std::string cname;                        ///< the first SDES CNAME item
  int other = 0;
};

/// Parses one compound RTCP datagram, validated as RFC 3550 A.2 does: version 2 throughout,
/// the first packet an SR or RR, padding only on the last, lengths that add up exactly to the
/// datagram. nullopt for anything else.
std::optional<rtcp_compound> parse_rtcp(std::span<const uint8_t> datagram);

/// A compound receiver report: an RR from `ssrc` with `blocks` (at most 31), then SDES with the
/// CNAME (RFC 3550 6.1 requires it in every compound), then a BYE when `bye`.
std::vector<uint8_t> render_receiver_report(uint32_t ssrc, std::span<const rtcp_report_block> blocks,
                                            std::string_view cname, bool bye = false);

/// The middle 32 bits of an NTP timestamp (the LSR of a report on that SR).
inline uint32_t ntp_middle32(uint64_t ntp) { return static_cast<uint32_t>(ntp >> 16); }

}  // namespace sluice::net::sip
