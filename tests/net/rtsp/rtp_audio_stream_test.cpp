// An RTSP stream's RTCP side: the receiver report it writes after a known packet sequence,
// with every field worked out by hand from RFC 3550 (6.4.1, appendix A.3 and A.8) rather than
// from the code: packets across a sequence wrap with two lost, a sender report, and the delay
// since it.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "net/rtsp/rtp_audio_stream.hpp"
#include "net/sip/rtcp_packet.hpp"
#include "tests/net/sip/rtcp_test_packets.hpp"

using namespace sluice::net;

namespace {
constexpr uint32_t sender_ssrc = 0x11223344;
constexpr int samples = 160;  // 20 ms of PCMU at 8 kHz

std::vector<uint8_t> pcmu_packet(uint16_t seq, uint32_t ts) {
  std::vector<uint8_t> v(12 + samples, 0xff);  // PCMU silence
  v[0] = 0x80;
  v[1] = 0;  // PT 0
  v[2] = static_cast<uint8_t>(seq >> 8);
  v[3] = static_cast<uint8_t>(seq);
  for (int i = 0; i < 4; ++i) v[4 + i] = static_cast<uint8_t>(ts >> (24 - 8 * i));
  for (int i = 0; i < 4; ++i) v[8 + i] = static_cast<uint8_t>(sender_ssrc >> (24 - 8 * i));
  return v;
}

// The sender's SR at NTP time `ntp`, after its 14 packets.
std::vector<uint8_t> sender_report(uint64_t ntp) { return sluice::test::sender_report(sender_ssrc, ntp, 14, 14 * samples); }

rtsp::rtsp_media pcmu() {
  rtsp::rtsp_media m;
  m.taken = true;
  m.kind = "audio";
  m.codec = rtsp::rtsp_codec::pcmu;
  m.payload_type = 0;
  return m;
}
}  // namespace

TEST_SUITE("rtsp RTCP receiver reports") {
  TEST_CASE("after 14 of 16 packets across a sequence wrap and an SR: lost 2, fraction 32/256, highest 65545, LSR/DLSR") {
    std::size_t pcm_bytes = 0;
    rtsp::rtp_audio_stream s(pcmu(), sip::jitter_buffer_config{}, [&](std::vector<uint8_t> pcm) { pcm_bytes += pcm.size(); });
    CHECK(s.receiver_report(0, "sluice@test").empty());  // nothing heard: nothing to report
    // Sequence numbers 65530..65535, 0..9 (16 packets); 2 and 3 never arrive. Each arrives
    // exactly 20 ms after the one before it would have: the transit time never changes.
    const int64_t t0 = 1'000'000'000;
    for (int i = 0; i < 16; ++i) {
      const auto seq = static_cast<uint16_t>(65530 + i);
      if (seq == 2 || seq == 3) continue;
      s.on_packet(pcmu_packet(seq, 1000u + static_cast<uint32_t>(i * samples)), t0 + i * 20'000);
    }
    const uint64_t ntp = 0x0000123456780000ull;  // LSR is its middle 32 bits: 0x12345678
    const int64_t sr_at = t0 + 16 * 20'000;
    s.on_rtcp(sender_report(ntp), sr_at);
    s.on_rtcp(std::vector<uint8_t>{0x80, 201, 0, 9}, sr_at);  // a length that does not add up
    // Half a second after the SR: DLSR 0.5 s = 32768 / 65536 s.
    const auto bytes = s.receiver_report(sr_at + 500'000, "sluice@test");
    const auto c = sip::parse_rtcp(bytes);
    REQUIRE(c.has_value());
    CHECK_FALSE(c->sender.has_value());  // an RR, not an SR: sluice sends no media
    CHECK(c->cname == "sluice@test");
    CHECK(c->bye.empty());
    REQUIRE(c->blocks.size() == 1);
    const auto& b = c->blocks[0];
    CHECK(b.ssrc == sender_ssrc);
    CHECK(b.highest_seq == (1u << 16) + 9u);  // one wrap, then 9
    CHECK(b.cumulative_lost == 2);
    CHECK(b.fraction_lost == 2 * 256 / 16);
    CHECK(b.jitter == 0);
    CHECK(b.lsr == 0x12345678u);
    CHECK(b.dlsr == 32768u);
    CHECK(c->reporter_ssrc != sender_ssrc);
    // The next interval heard nothing new: nothing lost in it, the total stays.
    const auto next = sip::parse_rtcp(s.receiver_report(sr_at + 5'500'000, "sluice@test", true));
    REQUIRE(next.has_value());
    REQUIRE(next->blocks.size() == 1);
    CHECK(next->blocks[0].fraction_lost == 0);
    CHECK(next->blocks[0].cumulative_lost == 2);
    CHECK(next->reporter_ssrc == c->reporter_ssrc);
    REQUIRE(next->bye.size() == 1);  // the last report says goodbye
    CHECK(next->bye[0] == c->reporter_ssrc);
    s.flush();
    CHECK(pcm_bytes == 16u * samples * 2);  // 14 packets and 2 concealed, 16-bit
    const auto st = s.stats();
    CHECK(st["rtcp_received"] == 1);
    CHECK(st["rtcp_invalid"] == 1);
    CHECK(st["sender_reports"] == 1);
    CHECK(st["rtcp_sent"] == 0);  // written, not sent: the session or pull sends and counts them
  }

  TEST_CASE("interarrival jitter: packets alternately 10 ms late settle at 79-80 timestamp units (A.8, integer form)") {
    rtsp::rtp_audio_stream s(pcmu(), sip::jitter_buffer_config{}, [](std::vector<uint8_t>) {});
    // Transit alternates by 10 ms (80 units at 8 kHz): |D| = 80 for every pair, and
    // J += (|D| - J) / 16 approaches 80 from below.
    for (int i = 0; i < 400; ++i)
      s.on_packet(pcmu_packet(static_cast<uint16_t>(100 + i), static_cast<uint32_t>(i * samples)),
                  int64_t{5'000'000} + i * 20'000 + (i % 2 ? 10'000 : 0));
    const auto c = sip::parse_rtcp(s.receiver_report(20'000'000, "x"));
    REQUIRE(c.has_value());
    REQUIRE(c->blocks.size() == 1);
    CHECK(c->blocks[0].jitter >= 79u);
    CHECK(c->blocks[0].jitter <= 80u);
    CHECK(c->blocks[0].lsr == 0);  // no SR heard
    CHECK(c->blocks[0].dlsr == 0);
  }
}
