// RTCP parsing and receiver statistics (net/sip/rtcp_packet.hpp, rtcp_stats.hpp). The packets are
// written byte by byte from RFC 3550 6.4's layouts here; the statistics are checked against
// counts the test knows from what it fed (not against the code's own formulas).
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "net/sip/rtcp_packet.hpp"
#include "net/sip/rtcp_stats.hpp"

using namespace sluice::net::sip;

namespace {
void put32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
}

// An SR from 0xAABBCCDD with NTP 0x0123456789ABCDEF and one report block, then an SDES with
// CNAME "peer", then a BYE with the reason "done".
std::vector<uint8_t> sr_sdes_bye() {
  std::vector<uint8_t> v = {0x81, 200, 0, 12};  // V=2, RC=1, length 12 words (52 bytes)
  put32(v, 0xAABBCCDD);
  put32(v, 0x01234567);
  put32(v, 0x89ABCDEF);
  put32(v, 1000);  // RTP timestamp
  put32(v, 50);    // packets
  put32(v, 8000);  // octets
  put32(v, 0x11111111);                      // block: SSRC
  v.insert(v.end(), {0x40, 0xFF, 0xFF, 0xFE});  // fraction 64/256, cumulative -2
  put32(v, 0x00010005);                      // highest seq: 1 cycle, seq 5
  put32(v, 77);                              // jitter
  put32(v, 0x22223333);                      // LSR
  put32(v, 0x00008000);                      // DLSR: 0.5 s
  v.insert(v.end(), {0x81, 202, 0, 3});         // SDES, one chunk, 3 words
  put32(v, 0xAABBCCDD);
  v.insert(v.end(), {1, 4, 'p', 'e', 'e', 'r', 0, 0});
  v.insert(v.end(), {0x81, 203, 0, 3});  // BYE, one SSRC and a reason: 3 words
  put32(v, 0xAABBCCDD);
  v.insert(v.end(), {4, 'd', 'o', 'n', 'e', 0, 0, 0});
  return v;
}
}  // namespace

TEST_SUITE("rtcp packets") {
  TEST_CASE("a compound SR + SDES + BYE gives the sender info, the block, the CNAME and the BYE") {
    const auto bytes = sr_sdes_bye();
    auto c = parse_rtcp(bytes);
    REQUIRE(c.has_value());
    REQUIRE(c->sender.has_value());
    CHECK(c->sender->ssrc == 0xAABBCCDD);
    CHECK(c->sender->ntp == 0x0123456789ABCDEFull);
    CHECK(c->sender->packets == 50);
    CHECK(c->reporter_ssrc == 0xAABBCCDD);
    REQUIRE(c->blocks.size() == 1);
    CHECK(c->blocks[0].ssrc == 0x11111111);
    CHECK(c->blocks[0].fraction_lost == 64);
    CHECK(c->blocks[0].cumulative_lost == -2);
    CHECK(c->blocks[0].highest_seq == 0x00010005);
    CHECK(c->blocks[0].jitter == 77);
    CHECK(c->blocks[0].lsr == 0x22223333);
    CHECK(c->blocks[0].dlsr == 0x8000);
    CHECK(c->cname == "peer");
    REQUIRE(c->bye.size() == 1);
    CHECK(c->bye[0] == 0xAABBCCDD);
    CHECK(c->bye_reason == "done");
    CHECK(ntp_middle32(c->sender->ntp) == 0x456789AB);
  }

  TEST_CASE("malformed compounds are refused: truncated, lengths that do not add up, wrong first type, wrong version") {
    const auto good = sr_sdes_bye();
    CHECK_FALSE(parse_rtcp({}).has_value());
    auto cut = good;
    cut.pop_back();
    CHECK_FALSE(parse_rtcp(cut).has_value());  // the BYE's length runs past the end
    auto extra = good;
    extra.push_back(0);
    CHECK_FALSE(parse_rtcp(extra).has_value());  // 1 byte left over, not a packet
    auto sdes_first = std::vector<uint8_t>(good.begin() + 52, good.end());
    CHECK_FALSE(parse_rtcp(sdes_first).has_value());  // RFC 3550 A.2: SR or RR first
    auto v1 = good;
    v1[0] = 0x41;
    CHECK_FALSE(parse_rtcp(v1).has_value());
    auto padded_first = good;
    padded_first[0] |= 0x20;  // padding on the SR, which is not last
    CHECK_FALSE(parse_rtcp(padded_first).has_value());
    auto too_many_blocks = good;
    too_many_blocks[0] = 0x82;  // RC=2 in a packet with room for one
    CHECK_FALSE(parse_rtcp(too_many_blocks).has_value());
  }

  TEST_CASE("a rendered receiver report reads back with its fields, its CNAME and its BYE") {
    rtcp_report_block b;
    b.ssrc = 0x1234;
    b.fraction_lost = 25;
    b.cumulative_lost = 9;
    b.highest_seq = 0x0002FFFF;
    b.jitter = 800;
    b.lsr = 0x456789AB;
    b.dlsr = 65536;
    const std::vector<rtcp_report_block> blocks{b};
    const auto bytes = render_receiver_report(0x5555, blocks, "sluice@127.0.0.1", true);
    CHECK(bytes.size() % 4 == 0);
    CHECK(bytes[1] == 201);  // RR first
    auto c = parse_rtcp(bytes);
    REQUIRE(c.has_value());
    CHECK_FALSE(c->sender.has_value());
    CHECK(c->reporter_ssrc == 0x5555);
    REQUIRE(c->blocks.size() == 1);
    CHECK(c->blocks[0].ssrc == 0x1234);
    CHECK(c->blocks[0].fraction_lost == 25);
    CHECK(c->blocks[0].cumulative_lost == 9);
    CHECK(c->blocks[0].highest_seq == 0x0002FFFF);
    CHECK(c->blocks[0].jitter == 800);
    CHECK(c->blocks[0].lsr == 0x456789AB);
    CHECK(c->blocks[0].dlsr == 65536);
    CHECK(c->cname == "sluice@127.0.0.1");
    CHECK(c->bye == std::vector<uint32_t>{0x5555});
    // A negative cumulative loss (duplicates) survives the 24-bit field.
    b.cumulative_lost = -3;
    const std::vector<rtcp_report_block> dup{b};
    auto d = parse_rtcp(render_receiver_report(1, dup, "x"));
    REQUIRE(d.has_value());
    CHECK(d->blocks[0].cumulative_lost == -3);
    CHECK(d->bye.empty());
  }
}

TEST_SUITE("rtcp receiver statistics") {
  TEST_CASE("loss across a sequence wrap: cumulative and per-interval fraction as counted by the test") {
    rtcp_stats st(8000);
    const uint16_t first = 65530;
    const std::set<int> dropped = {3, 4, 9, 20};  // indexes never delivered
    int64_t t = 0;
    auto feed = [&](int from, int to) {
      for (int i = from; i < to; ++i, t += 20000)
        if (!dropped.count(i)) st.on_rtp(7, static_cast<uint16_t>(first + i), static_cast<uint32_t>(i * 160), true, t);
    };
    feed(0, 10);  // indexes 0-9: 3, 4, 9 lost (9 is the highest sent but never arrives)
    auto r1 = st.report(t);
    CHECK(r1.ssrc == 7);
    // Highest received is index 8 = 65538 extended (one wrap).
    CHECK(r1.highest_seq == 65536u + 2u);
    CHECK(r1.cumulative_lost == 2);           // 3 and 4; 9 is beyond the highest seen
    CHECK(r1.fraction_lost == 2 * 256 / 9);   // 2 of 9 expected
    feed(10, 30);
    auto r2 = st.report(t);
    CHECK(r2.highest_seq == 65536u + 23u);
    CHECK(r2.cumulative_lost == 4);
    CHECK(r2.fraction_lost == 2 * 256 / 21);  // 9 and 20 of the 21 after index 8
    auto r3 = st.report(t);
    CHECK(r3.fraction_lost == 0);  // nothing new: nothing lost in the interval
    CHECK(r3.cumulative_lost == 4);
  }

  TEST_CASE("jitter converges to an alternating timestamp offset, and LSR/DLSR come from the last SR") {
    rtcp_stats st(8000);
    // Sent every 20 ms (160 units) on time, but every odd packet's timestamp is 400 units ahead:
    // |D| is 400 at every step, so J tends to 400 (RFC 3550 A.8: J += (|D| - J)/16).
    for (int i = 0; i < 200; ++i)
      st.on_rtp(1, static_cast<uint16_t>(i), static_cast<uint32_t>(i * 160 + (i % 2 ? 400 : 0)), true, i * 20000);
    auto r = st.report(200 * 20000);
    CHECK(r.jitter >= 395);
    CHECK(r.jitter <= 400);
    CHECK(r.lsr == 0);
    CHECK(r.dlsr == 0);
    st.on_sender_report(0x0123456789ABCDEFull, 5'000'000);
    auto r2 = st.report(5'250'000);  // 0.25 s later
    CHECK(r2.lsr == 0x456789AB);
    CHECK(r2.dlsr == 65536 / 4);
  }

  TEST_CASE("a big sequence jump is believed only when the next packet follows it") {
    rtcp_stats st(8000);
    for (int i = 0; i < 5; ++i) st.on_rtp(1, static_cast<uint16_t>(100 + i), 0, false, 0);
    st.on_rtp(1, 30000, 0, false, 0);  // one stray packet far ahead: ignored
    auto r = st.report(0);
    CHECK(r.highest_seq == 104);
    CHECK(r.cumulative_lost == 0);
    st.on_rtp(1, 40000, 0, false, 0);  // a restart: 40000 then 40001
    st.on_rtp(1, 40001, 0, false, 0);
    auto r2 = st.report(0);
    CHECK(r2.highest_seq == 40001);
    CHECK(r2.cumulative_lost == 0);
  }
}
