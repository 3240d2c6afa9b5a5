#pragma once
/// The sum of a span in double, in four interleaved running sums (element i goes to sum i % 4,
/// a tail past the last whole four to sum 0; then (s0 + s1) + (s2 + s3)). One running sum is a
/// chain of dependent additions, which on the short spans of a frame (the fbank's samples, a VAD
/// band's bins) was most of the time of the loops that summed them; four chains run side by side.
/// The order differs from one sum's, so the result may differ from it by rounding at the
/// 1e-16 level; it is the same bits for the same input every time.

#include <cstddef>
#include <span>

namespace sluice::dsp {

template <typename T>
double lane_sum(std::span<const T> values) {
  double sums[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t i = 0;
  for (; i + 4 <= values.size(); i += 4)
    for (std::size_t j = 0; j < 4; ++j) sums[j] += static_cast<double>(values[i + j]);
  for (; i < values.size(); ++i) sums[0] += static_cast<double>(values[i]);
  return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}

}  // namespace sluice::dsp
