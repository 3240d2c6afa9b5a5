// The per-stream RTP token bucket (net/sip/rate_limiter.hpp), against hand arithmetic.
#include <doctest/doctest.h>

#include "net/sip/rate_limiter.hpp"

using sluice::net::sip::rate_limiter;

TEST_SUITE("rtp rate limit") {
  TEST_CASE("80 kbit/s is 10,000 bytes a second with a 10,000-byte burst, refilling at 10 bytes per ms, never past the burst") {
    auto r = rate_limiter::kbps(80);
    int passed = 0;
    for (int i = 0; i < 100; ++i) passed += r.admit(172, 0);
    CHECK(passed == 10000 / 172);  // 58 of 172 bytes fit in 10,000
    // 10000 - 58 * 172 = 24 bytes left; 100 ms later 1,024: 5 more packets, then none.
    passed = 0;
    for (int i = 0; i < 10; ++i) passed += r.admit(172, 100'000);
    CHECK(passed == 1024 / 172);
    // An hour of silence saves no more than the burst.
    passed = 0;
    for (int i = 0; i < 100; ++i) passed += r.admit(172, 3'600'000'000);
    CHECK(passed == 10000 / 172);
  }

  TEST_CASE("a steady stream under the rate always passes: G.711 in 20 ms packets (8,600 B/s) under 80 kbit/s") {
    auto r = rate_limiter::kbps(80);
    for (int i = 0; i < 5000; ++i) REQUIRE(r.admit(172, int64_t{i} * 20'000));
  }

  TEST_CASE("0 means no limit, and a datagram larger than the burst never passes a limit") {
    auto none = rate_limiter::kbps(0);
    for (int i = 0; i < 1000; ++i) REQUIRE(none.admit(65535, 0));
    auto r = rate_limiter::kbps(8);  // 1,000 bytes a second
    CHECK_FALSE(r.admit(1001, 0));
    CHECK(r.admit(1000, 0));
    // With a minimum burst (RTSP's 64 KiB interleaved frames): one such frame passes, then the
    // rate rules: 1,000 bytes a second.
    auto big = rate_limiter::kbps(8, 65536);
    CHECK(big.admit(65536, 0));
    CHECK_FALSE(big.admit(1001, 1'000'000));
    CHECK(big.admit(1000, 1'000'000));
  }
}
