#include "kernels/cpu/ops.hpp"

namespace sluice::kernels::cpu {

const cpu_ops& cpu_ops_for(simd_level level) {
  if (!simd_supported(level)) level = best_simd_level();
  switch (level) {
    case simd_level::avx512: return avx512_ops();
    case simd_level::avx2: return avx2_ops();
    case simd_level::scalar: break;
  }
  return scalar_ops();
}

}  // namespace sluice::kernels::cpu
