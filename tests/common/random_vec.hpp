#pragma once
// Reproducible test data: n values from a normal distribution (mean 0, deviation `scale`).

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace sluice::test {

inline std::vector<float> random_vec(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace sluice::test
