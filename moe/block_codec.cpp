#include "moe/block_codec.hpp"

#include <string>

#include "kernels/cpu/fp8.hpp"

namespace sluice::moe {

std::size_t fp8_group_size() { return kernels::cpu::fp8_group; }

void encode_fp8(std::span<const float> rows, std::vector<uint8_t>& q, std::vector<float>& scales) {
  q.resize(rows.size());
  scales.resize(kernels::cpu::fp8_scale_count(rows.size()));
  kernels::cpu::quantize_e4m3(rows, q, scales);
}

result<void> decode_fp8(std::span<const uint8_t> q, std::span<const float> scales, std::vector<float>& rows) {
  if (scales.size() != kernels::cpu::fp8_scale_count(q.size()))
    return fail(errc::invalid_argument, "FP8 rows: " + std::to_string(scales.size()) + " scales for " +
                                            std::to_string(q.size()) + " values, expected " +
                                            std::to_string(kernels::cpu::fp8_scale_count(q.size())));
  rows.resize(q.size());
  kernels::cpu::dequantize_e4m3(q, scales, rows);
  return {};
}

}  // namespace sluice::moe
