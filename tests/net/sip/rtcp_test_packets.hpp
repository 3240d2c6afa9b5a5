#pragma once
// Test input: an RTCP sender report as a peer sends it, written from RFC 3550 6.4.1 (not with
// the code under test).
#include <cstdint>
#include <vector>

namespace sluice::test {

/// An SR with no report blocks: the sender's SSRC, its NTP time (32.32), RTP time 0, and its
/// packet and octet counts.
inline std::vector<uint8_t> sender_report(uint32_t ssrc, uint64_t ntp, uint32_t packets, uint32_t octets) {
  std::vector<uint8_t> v = {0x80, 200, 0, 6};
  auto put = [&](uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
  };
  put(ssrc);
  put(static_cast<uint32_t>(ntp >> 32));
  put(static_cast<uint32_t>(ntp));
  put(0);
  put(packets);
  put(octets);
  return v;
}

}  // namespace sluice::test
