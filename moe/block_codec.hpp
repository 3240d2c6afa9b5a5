#pragma once
/// The wire encodings of a token block's rows (kernels/cpu/fp8 underneath): FP8 E4M3 with one
/// f32 scale per 128 values. Buffers are resized in place (their memory reused).

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"

namespace sluice::moe {

/// Values per FP8 scale.
std::size_t fp8_group_size();

/// rows f32 [n] -> q u8 [n], scales f32 [ceil(n / 128)].
void encode_fp8(std::span<const float> rows, std::vector<uint8_t>& q, std::vector<float>& scales);

/// The inverse into rows (resized to q.size()). errc::invalid_argument when the number of
/// scales does not match q.
result<void> decode_fp8(std::span<const uint8_t> q, std::span<const float> scales, std::vector<float>& rows);

}  // namespace sluice::moe
