#include "moe/half_float.hpp"

#include <bit>
#include <cstring>

namespace sluice::moe {
namespace {

constexpr uint32_t f16_exp_mask = 0x1f;       // 5 exponent bits
constexpr int f16_mant_bits = 10;
constexpr uint32_t f16_mant_mask = 0x3ff;
constexpr int f32_mant_bits = 23;
constexpr uint32_t f32_exp_all_ones = 0xff;
// f32 bias 127 minus f16 bias 15: a normal f16 exponent field e becomes e + 112.
constexpr uint32_t exp_rebias = 127 - 15;
// An f16 subnormal is mant * 2^-24; with its leading one at bit p it is 1.f * 2^(p - 24),
// whose f32 exponent field is p - 24 + 127.
constexpr uint32_t subnormal_exp_base = 127 - 24;

template <float (*convert)(uint16_t)>
void widen_16(const std::byte* src, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, sizeof h);  // the view may be unaligned
    out[i] = convert(h);
  }
}

}  // namespace

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exp = (h >> f16_mant_bits) & f16_exp_mask;
  const uint32_t mant = h & f16_mant_mask;
  uint32_t bits;
  if (exp == f16_exp_mask) {  // infinity (mant 0) or NaN: the payload moves to the top of f32's
    bits = sign | (f32_exp_all_ones << f32_mant_bits) | (mant << (f32_mant_bits - f16_mant_bits));
  } else if (exp != 0) {
    bits = sign | ((exp + exp_rebias) << f32_mant_bits) | (mant << (f32_mant_bits - f16_mant_bits));
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {        // subnormal in f16, normal in f32: move the leading one out of the fraction
    const int p = 31 - std::countl_zero(mant);
    bits = sign | ((subnormal_exp_base + uint32_t(p)) << f32_mant_bits) |
           ((mant << (f32_mant_bits - p)) & ((1u << f32_mant_bits) - 1));
  }
  return std::bit_cast<float>(bits);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

bool is_float_weight(st_dtype dtype) {
  return dtype == st_dtype::f32 || dtype == st_dtype::f16 || dtype == st_dtype::bf16;
}

result<std::vector<float>> widen_to_f32(const tensor_view& t, const std::string& source) {
  const std::string at = source + ": tensor '" + t.name + "'";
  if (!is_float_weight(t.dtype))
    return fail(errc::unsupported, at + " is " + to_string(t.dtype) + "; the engine reads F32, F16 or BF16 weights");
  const auto n = static_cast<std::size_t>(t.numel());
  const std::size_t need = n * dtype_size(t.dtype);
  if (t.nbytes != need)
    return fail(errc::corrupt, at + ": shape " + t.shape_string() + " " + to_string(t.dtype) + " needs " +
                                   std::to_string(need) + " bytes, the view holds " + std::to_string(t.nbytes));
  std::vector<float> out(n);
  if (n == 0) return out;
  switch (t.dtype) {
    case st_dtype::f16: widen_16<f16_to_f32>(t.data, n, out.data()); break;
    case st_dtype::bf16: widen_16<bf16_to_f32>(t.data, n, out.data()); break;
    default: std::memcpy(out.data(), t.data, need); break;  // F32
  }
  return out;
}

}  // namespace sluice::moe
