// RTP and RFC 4733 parsing over hand-built datagrams (bytes written from RFC 3550 5.1's
// layout, not from the parser), including every malformed length the header can announce.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "net/sip/rtp_packet.hpp"

using namespace sluice::net::sip;

namespace {
std::vector<uint8_t> header(uint8_t b0, uint8_t b1, uint16_t seq, uint32_t ts, uint32_t ssrc) {
  return {b0, b1, uint8_t(seq >> 8), uint8_t(seq), uint8_t(ts >> 24), uint8_t(ts >> 16), uint8_t(ts >> 8), uint8_t(ts),
          uint8_t(ssrc >> 24), uint8_t(ssrc >> 16), uint8_t(ssrc >> 8), uint8_t(ssrc)};
}
}  // namespace

TEST_SUITE("sip rtp packet") {
  TEST_CASE("a plain RTP packet gives its header fields and payload") {
    auto d = header(0x80, 0x80 | 8, 0xfffe, 0x01020304, 0xdeadbeef);
    d.insert(d.end(), {1, 2, 3});
    auto p = parse_rtp(d);
    REQUIRE(p);
    CHECK(p->payload_type == 8);
    CHECK(p->marker);
    CHECK(p->seq == 0xfffe);
    CHECK(p->timestamp == 0x01020304u);
    CHECK(p->ssrc == 0xdeadbeefu);
    REQUIRE(p->payload.size() == 3);
    CHECK(p->payload[0] == 1);
    CHECK(p->payload[2] == 3);
  }

  TEST_CASE("CSRCs, a header extension and padding are skipped") {
    auto d = header(0x80 | 0x20 | 0x10 | 2, 0, 1, 2, 3);  // padding, extension, 2 CSRCs
    d.insert(d.end(), 8, 0xcc);                           // two CSRCs
    d.insert(d.end(), {0xbe, 0xde, 0, 1});                // extension header: 1 word
    d.insert(d.end(), 4, 0xee);                           // the word
    d.insert(d.end(), {7, 8});                            // payload
    d.insert(d.end(), {0, 0, 3});                         // 3 bytes of padding, count last
    auto p = parse_rtp(d);
    REQUIRE(p);
    REQUIRE(p->payload.size() == 2);
    CHECK(p->payload[0] == 7);
    CHECK(p->payload[1] == 8);
  }

  TEST_CASE("malformed datagrams are refused, not read past their end") {
    CHECK_FALSE(parse_rtp(std::vector<uint8_t>{}));
    CHECK_FALSE(parse_rtp(std::vector<uint8_t>(11, 0x80)));          // shorter than the header
    CHECK_FALSE(parse_rtp(header(0x40, 0, 1, 2, 3)));                // version 1
    CHECK_FALSE(parse_rtp(header(0x80 | 15, 0, 1, 2, 3)));           // 15 CSRCs announced, none there
    auto ext = header(0x90, 0, 1, 2, 3);
    ext.insert(ext.end(), {0xbe, 0xde, 0xff, 0xff});                 // extension longer than the packet
    CHECK_FALSE(parse_rtp(ext));
    auto pad0 = header(0xa0, 0, 1, 2, 3);
    pad0.push_back(0);                                               // padding count 0
    CHECK_FALSE(parse_rtp(pad0));
    auto padbig = header(0xa0, 0, 1, 2, 3);
    padbig.push_back(200);                                           // more padding than payload
    CHECK_FALSE(parse_rtp(padbig));
    CHECK_FALSE(parse_rtp(header(0x80, 0x80 | 72, 1, 2, 3)));        // RTCP sender report (200)
  }

  TEST_CASE("an empty payload is a valid packet") {
    auto p = parse_rtp(header(0x80, 0, 1, 2, 3));
    REQUIRE(p);
    CHECK(p->payload.empty());
  }

  TEST_CASE("RFC 4733 events: digit, end bit, volume, duration") {
    const std::vector<uint8_t> five_end{5, 0x80 | 10, 0x03, 0x20};  // '5', E, volume 10, 800 units
    auto e = parse_telephone_event(five_end);
    REQUIRE(e);
    CHECK(e->event == 5);
    CHECK(e->end);
    CHECK(e->volume == 10);
    CHECK(e->duration == 800);
    CHECK(dtmf_char(e->event) == '5');
    CHECK(dtmf_char(10) == '*');
    CHECK(dtmf_char(11) == '#');
    CHECK(dtmf_char(15) == 'D');
    CHECK(dtmf_char(16) == 0);
    CHECK_FALSE(parse_telephone_event(std::vector<uint8_t>{1, 2, 3}));
  }
}
