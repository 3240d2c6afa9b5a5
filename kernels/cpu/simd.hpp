#pragma once
/// The SIMD instruction sets the CPU kernels have paths for, and which of them this CPU runs.
/// The scalar path is the reference every vector path is tested against.

#include <string_view>

#include "config/error.hpp"

namespace sluice::kernels::cpu {

enum class simd_level {
  scalar,  ///< portable C++; the reference
  avx2,    ///< AVX2 + FMA, 8 floats per vector
  avx512,  ///< AVX-512F, 16 floats per vector
};

/// "scalar", "avx2", "avx512".
const char* to_string(simd_level level);

/// Parses the names of to_string; errc::invalid_argument otherwise.
result<simd_level> parse_simd_level(std::string_view name);

/// True when this CPU can run `level` (scalar always).
bool simd_supported(simd_level level);

/// The widest level this CPU runs.
simd_level best_simd_level();

}  // namespace sluice::kernels::cpu
