#pragma once
// Helpers shared by the moe test files.

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/simd.hpp"

namespace sluice::test {

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst;
}

inline std::vector<kernels::cpu::simd_level> supported_levels() {
  std::vector<kernels::cpu::simd_level> out;
  for (auto l : {kernels::cpu::simd_level::scalar, kernels::cpu::simd_level::avx2, kernels::cpu::simd_level::avx512})
    if (kernels::cpu::simd_supported(l)) out.push_back(l);
  return out;
}

}  // namespace sluice::test
