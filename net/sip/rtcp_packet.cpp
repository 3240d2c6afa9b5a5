#include "net/sip/rtcp_packet.hpp"

#include <algorithm>

namespace sluice::net::sip {

namespace {
constexpr uint8_t rtcp_version = 2;
constexpr uint8_t pt_sr = 200, pt_rr = 201, pt_sdes = 202, pt_bye = 203;
constexpr std::size_t header_bytes = 4;
constexpr std::size_t sender_info_bytes = 20;  // NTP (8), RTP timestamp, packets, octets
constexpr std::size_t block_bytes = 24;
constexpr std::size_t max_blocks = 31;  // the 5-bit count
constexpr uint8_t sdes_end = 0, sdes_cname = 1;
constexpr int32_t lost_max = 0x7fffff, lost_min = -0x800000;

uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 | p[3];
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

rtcp_report_block read_block(const uint8_t* p) {
  rtcp_report_block b;
  b.ssrc = be32(p);
  b.fraction_lost = p[4];
  // 24-bit two's complement.
  int32_t lost = static_cast<int32_t>(p[5]) << 16 | static_cast<int32_t>(p[6]) << 8 | p[7];
  if (lost & 0x800000) lost -= 0x1000000;
  b.cumulative_lost = lost;
  b.highest_seq = be32(p + 8);
  b.jitter = be32(p + 12);
  b.lsr = be32(p + 16);
  b.dlsr = be32(p + 20);
  return b;
}

// The SDES chunks of one packet: the first CNAME found is kept.
void read_sdes(std::span<const uint8_t> body, std::size_t chunks, std::string& cname) {
  std::size_t off = 0;
  for (std::size_t c = 0; c < chunks && off + 4 <= body.size(); ++c) {
    off += 4;  // SSRC/CSRC
    while (off < body.size() && body[off] != sdes_end) {
      if (off + 2 > body.size()) return;
      const uint8_t type = body[off];
      const std::size_t len = body[off + 1];
      if (off + 2 + len > body.size()) return;
      if (type == sdes_cname && cname.empty())
        cname.assign(reinterpret_cast<const char*>(body.data() + off + 2), len);
      off += 2 + len;
    }
    off = (off + 4) & ~std::size_t{3};  // the end item and padding to the next word
  }
}
}  // namespace

std::optional<rtcp_compound> parse_rtcp(std::span<const uint8_t> d) {
  rtcp_compound out;
  std::size_t off = 0;
  bool first = true;
  while (off < d.size()) {
    if (d.size() - off < header_bytes) return std::nullopt;
    const uint8_t b0 = d[off], pt = d[off + 1];
    if ((b0 >> 6) != rtcp_version) return std::nullopt;
    const bool padding = b0 & 0x20;
    const std::size_t count = b0 & 0x1f;
    const std::size_t bytes = (static_cast<std::size_t>(d[off + 2]) << 8 | d[off + 3]) * 4 + header_bytes;
    if (bytes > d.size() - off) return std::nullopt;
    if (first && pt != pt_sr && pt != pt_rr) return std::nullopt;
    std::size_t end = bytes;
    if (padding) {
      // RFC 3550 A.2: only the last packet of a compound may be padded.
      if (off + bytes != d.size()) return std::nullopt;
      const std::size_t pad = d[off + bytes - 1];
      if (pad == 0 || pad > bytes - header_bytes) return std::nullopt;
      end -= pad;
    }
    const auto body = d.subspan(off + header_bytes, end - header_bytes);
    switch (pt) {
      case pt_sr:
      case pt_rr: {
        const std::size_t fixed = 4 + (pt == pt_sr ? sender_info_bytes : 0);
        if (body.size() < fixed + count * block_bytes) return std::nullopt;
        const uint32_t ssrc = be32(body.data());
        if (first) out.reporter_ssrc = ssrc;
        if (pt == pt_sr && !out.sender) {
          rtcp_sender_info s;
          s.ssrc = ssrc;
          s.ntp = static_cast<uint64_t>(be32(body.data() + 4)) << 32 | be32(body.data() + 8);
          s.rtp_timestamp = be32(body.data() + 12);
          s.packets = be32(body.data() + 16);
          s.octets = be32(body.data() + 20);
          out.sender = s;
        }
        for (std::size_t i = 0; i < count; ++i) out.blocks.push_back(read_block(body.data() + fixed + i * block_bytes));
        break;
      }
      case pt_sdes:
        read_sdes(body, count, out.cname);
        break;
      case pt_bye: {
        if (body.size() < count * 4) return std::nullopt;
        for (std::size_t i = 0; i < count; ++i) out.bye.push_back(be32(body.data() + i * 4));
        const std::size_t at = count * 4;
        if (at < body.size()) {
          const std::size_t len = std::min<std::size_t>(body[at], body.size() - at - 1);
          out.bye_reason.assign(reinterpret_cast<const char*>(body.data() + at + 1), len);
        }
        break;
      }
      default:
        ++out.other;
    }
    first = false;
    off += bytes;
  }
  if (first) return std::nullopt;  // empty datagram
  return out;
}

std::vector<uint8_t> render_receiver_report(uint32_t ssrc, std::span<const rtcp_report_block> blocks,
                                            std::string_view cname, bool bye) {
  std::vector<uint8_t> out;
  const std::size_t n = std::min(blocks.size(), max_blocks);
  // RR: header, our SSRC, the blocks. The length field counts 32-bit words minus one.
  out.push_back(static_cast<uint8_t>(rtcp_version << 6 | n));
  out.push_back(pt_rr);
  const auto rr_words = static_cast<uint16_t>(1 + n * block_bytes / 4);
  out.push_back(static_cast<uint8_t>(rr_words >> 8));
  out.push_back(static_cast<uint8_t>(rr_words & 0xff));
  put32(out, ssrc);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& b = blocks[i];
    put32(out, b.ssrc);
    const int32_t lost = std::clamp(b.cumulative_lost, lost_min, lost_max);
    put32(out, static_cast<uint32_t>(b.fraction_lost) << 24 | (static_cast<uint32_t>(lost) & 0xffffff));
    put32(out, b.highest_seq);
    put32(out, b.jitter);
    put32(out, b.lsr);
    put32(out, b.dlsr);
  }
  // SDES: one chunk, CNAME, end, padded to a word.
  const std::size_t name_len = std::min<std::size_t>(cname.size(), 255);
  const std::size_t chunk = 4 + 2 + name_len + 1;
  const std::size_t padded = (chunk + 3) & ~std::size_t{3};
  out.push_back(static_cast<uint8_t>(rtcp_version << 6 | 1));
  out.push_back(pt_sdes);
  const auto sdes_words = static_cast<uint16_t>(padded / 4);
  out.push_back(static_cast<uint8_t>(sdes_words >> 8));
  out.push_back(static_cast<uint8_t>(sdes_words & 0xff));
  put32(out, ssrc);
  out.push_back(sdes_cname);
  out.push_back(static_cast<uint8_t>(name_len));
  out.insert(out.end(), cname.begin(), cname.begin() + static_cast<std::ptrdiff_t>(name_len));
  for (std::size_t i = chunk - 1; i < padded; ++i) out.push_back(sdes_end);
  if (bye) {
    out.push_back(static_cast<uint8_t>(rtcp_version << 6 | 1));
    out.push_back(pt_bye);
    out.push_back(0);
    out.push_back(1);
    put32(out, ssrc);
  }
  return out;
}

}  // namespace sluice::net::sip
