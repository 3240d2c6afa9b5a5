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

/// rows f32 [n_rows, d] -> q u8 [n_rows, d], scales f32 [n_rows, ceil(d / 128)]: groups of 128
/// values never span two rows (tokens), so each token keeps its own dynamic range (1 x 128
/// tiles, as DeepSeek-V3 quantizes activations).
void encode_fp8(std::span<const float> rows, int64_t d, std::vector<uint8_t>& q, std::vector<float>& scales);

/// The inverse into rows (resized to q.size()). errc::invalid_argument when q is not whole
/// rows of d or the number of scales does not match.
result<void> decode_fp8(std::span<const uint8_t> q, std::span<const float> scales, int64_t d,
                        std::vector<float>& rows);

}  // namespace sluice::moe
