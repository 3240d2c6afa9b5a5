#include "kernels/cpu/simd.hpp"

#include <string>

namespace sluice::kernels::cpu {

const char* to_string(simd_level level) {
  switch (level) {
    case simd_level::scalar: return "scalar";
    case simd_level::avx2: return "avx2";
    case simd_level::avx512: return "avx512";
  }
  return "?";
}

result<simd_level> parse_simd_level(std::string_view name) {
  for (auto l : {simd_level::scalar, simd_level::avx2, simd_level::avx512})
    if (name == to_string(l)) return l;
  return fail(errc::invalid_argument,
              "unknown SIMD level '" + std::string(name) + "' (expected scalar, avx2 or avx512)");
}

bool simd_supported(simd_level level) {
  __builtin_cpu_init();
  switch (level) {
    case simd_level::scalar: return true;
    case simd_level::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case simd_level::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  return false;
}

simd_level best_simd_level() {
  if (simd_supported(simd_level::avx512)) return simd_level::avx512;
  if (simd_supported(simd_level::avx2)) return simd_level::avx2;
  return simd_level::scalar;
}

}  // namespace sluice::kernels::cpu
