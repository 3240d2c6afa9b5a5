#include "dsp/lane_sum.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <span>
#include <vector>

TEST_CASE("lane_sum: every element counted once, whatever the length's remainder by four") {
  // Small integers add exactly in double in any order, so the sum is known exactly: n (n + 1) / 2.
  for (std::size_t n = 0; n <= 13; ++n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i + 1);
    CAPTURE(n);
    CHECK(sluice::dsp::lane_sum(std::span<const float>(v)) == static_cast<double>(n * (n + 1) / 2));
  }
}

TEST_CASE("lane_sum: four interleaved sums, the tail into the first, combined pairwise") {
  // 2^53 is where doubles step by 2: 2^53 + 1 rounds (to even) back to 2^53, 2^53 + 2 is exact,
  // 2^53 + 3 rounds to 2^53 + 4. For {2^53, 1, 1, 1, 1} the lanes hold 2^53 (its 1 from the
  // tail lost), 1, 1, 1: (2^53 + 1) + (1 + 1) = 2^53 + 2. One running sum gives 2^53; the tail
  // in any other lane gives 2^53 + 4.
  const double big = 9007199254740992.0;  // 2^53
  const std::vector<double> v = {big, 1.0, 1.0, 1.0, 1.0};
  CHECK(sluice::dsp::lane_sum(std::span<const double>(v)) == big + 2.0);
}
