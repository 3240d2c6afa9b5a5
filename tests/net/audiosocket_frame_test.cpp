// AudioSocket framing (pure): headers, kinds and rates, UUID text, DTMF digits, error messages.
#include <doctest/doctest.h>

#include "net/switches/audiosocket_frame.hpp"

using namespace sluice::net::switches;

TEST_SUITE("audiosocket frame") {
  TEST_CASE("AudioSocket framing: big-endian length, the rate of each audio kind, UUID text, DTMF digits") {
    const uint8_t h[] = {0x10, 0x01, 0x40};
    const auto hdr = parse_audiosocket_header(h);
    CHECK(hdr.kind == 0x10);
    CHECK(hdr.length == 320);
    CHECK(audiosocket_sample_rate(0x10) == 8000);
    CHECK(audiosocket_sample_rate(0x12) == 16000);
    CHECK(audiosocket_sample_rate(0x18) == 192000);
    CHECK_FALSE(audiosocket_sample_rate(0x03).has_value());
    CHECK(known_audiosocket_kind(0x00));
    CHECK(known_audiosocket_kind(0xff));
    CHECK_FALSE(known_audiosocket_kind(0x02));
    CHECK_FALSE(known_audiosocket_kind(0x19));
    const uint8_t uuid[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
                              0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
    CHECK(format_uuid(uuid) == "123e4567-e89b-12d3-a456-426614174000");
    for (char c : std::string("0123456789*#ABCD")) CHECK(valid_dtmf_digit(c));
    for (char c : std::string("xE a")) CHECK_FALSE(valid_dtmf_digit(c));
    const auto e = make_audiosocket_error("bad");
    CHECK(e == std::vector<uint8_t>{0xff, 0x00, 0x03, 'b', 'a', 'd'});
  }
}
