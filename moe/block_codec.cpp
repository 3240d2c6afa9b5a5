#include "moe/block_codec.hpp"

#include <string>

#include "kernels/cpu/fp8.hpp"

namespace sluice::moe {

std::size_t fp8_group_size() { return kernels::cpu::fp8_group; }

void encode_fp8(std::span<const float> rows, int64_t d, std::vector<uint8_t>& q, std::vector<float>& scales) {
  const auto width = static_cast<std::size_t>(d), per_row = kernels::cpu::fp8_scale_count(width);
  const std::size_t n_rows = width > 0 ? rows.size() / width : 0;
  q.resize(rows.size());
  scales.resize(n_rows * per_row);
  for (std::size_t r = 0; r < n_rows; ++r)
    kernels::cpu::quantize_e4m3(rows.subspan(r * width, width), std::span<uint8_t>(q).subspan(r * width, width),
                                std::span<float>(scales).subspan(r * per_row, per_row));
}

result<void> decode_fp8(std::span<const uint8_t> q, std::span<const float> scales, int64_t d,
                        std::vector<float>& rows) {
  const auto width = static_cast<std::size_t>(d);
  if (width == 0 || q.size() % width != 0)
    return fail(errc::invalid_argument, "FP8 rows: " + std::to_string(q.size()) + " values are not whole rows of " +
                                            std::to_string(d));
  const std::size_t n_rows = q.size() / width, per_row = kernels::cpu::fp8_scale_count(width);
  if (scales.size() != n_rows * per_row)
    return fail(errc::invalid_argument, "FP8 rows: " + std::to_string(scales.size()) + " scales for " +
                                            std::to_string(n_rows) + " rows, expected " +
                                            std::to_string(n_rows * per_row));
  rows.resize(q.size());
  for (std::size_t r = 0; r < n_rows; ++r)
    kernels::cpu::dequantize_e4m3(q.subspan(r * width, width), scales.subspan(r * per_row, per_row),
                                  std::span<float>(rows).subspan(r * width, width));
  return {};
}

}  // namespace sluice::moe
