#pragma once
/// Widening of the 16-bit float dtypes a weights file may store (F16, BF16) to the f32 the
/// engine computes in. Every F16 and BF16 value is exactly an f32 value, so widening rounds
/// nothing: subnormals, signed zeros, infinities and NaN payloads all map exactly.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "moe/safetensors.hpp"

namespace sluice::moe {

/// IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits) -> f32, exact.
float f16_to_f32(uint16_t bits);

/// bfloat16 (the top 16 bits of an f32) -> f32, exact.
float bf16_to_f32(uint16_t bits);

/// Whether weights of this dtype are read (widened to f32): F32, F16, BF16.
bool is_float_weight(st_dtype dtype);

/// Tensor `t` as numel() f32 values. errc::unsupported naming the tensor (in `source`) and its
/// dtype when that is not F32, F16 or BF16; errc::corrupt when its byte length is not numel()
/// times the dtype's element size (nothing is read then).
result<std::vector<float>> widen_to_f32(const tensor_view& t, const std::string& source);

}  // namespace sluice::moe
