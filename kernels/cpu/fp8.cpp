#include "kernels/cpu/fp8.hpp"

#include <array>
#include <cmath>

namespace sluice::kernels::cpu {
namespace {

constexpr int exponent_bias = 7;
constexpr int min_normal_exp = -6;      // 2^-6: smallest normal
constexpr int subnormal_shift = 9;      // subnormals are k * 2^-9, k = 1..7
constexpr uint8_t max_finite = 0x7E;    // 448
constexpr uint8_t nan_code = 0x7F;
constexpr uint8_t sign_bit = 0x80;

std::array<float, 256> make_table() {
  std::array<float, 256> t{};
  for (int b = 0; b < 256; ++b) {
    const int e = (b >> 3) & 0xF, m = b & 7;
    float v = e == 0 ? std::ldexp(static_cast<float>(m), -subnormal_shift)
                     : std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - exponent_bias);
    if ((b & 0x7F) == nan_code) v = std::nanf("");
    t[static_cast<std::size_t>(b)] = (b & sign_bit) ? -v : v;
  }
  return t;
}

const std::array<float, 256> decode_table = make_table();

}  // namespace

uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return nan_code;
  const uint8_t sign = std::signbit(x) ? sign_bit : 0;
  const float a = std::fabs(x);
  if (a >= fp8_e4m3_max) return sign | max_finite;
  int e2 = 0;
  std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1): the normal exponent is e2 - 1
  const int exp = e2 - 1;
  if (a == 0.0f || exp < min_normal_exp) {
    // Subnormal (or zero): k * 2^-9 with k = 0..8; k = 8 is exactly the smallest normal, whose
    // code is 0x08 as well.
    const auto k = static_cast<int>(std::nearbyint(std::ldexp(a, subnormal_shift)));
    return sign | static_cast<uint8_t>(k);
  }
  auto q = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - exp)));  // 8 .. 16
  int e = exp;
  if (q == 16) {
    q = 8;
    ++e;
  }
  const int code = ((e + exponent_bias) << 3) | (q - 8);
  return sign | static_cast<uint8_t>(code > max_finite ? max_finite : code);
}

float e4m3_to_float(uint8_t b) { return decode_table[b]; }

void quantize_e4m3(std::span<const float> x, std::span<uint8_t> q, std::span<float> scales) {
  const std::size_t n = x.size();
  for (std::size_t g = 0, i0 = 0; i0 < n; ++g, i0 += fp8_group) {
    const std::size_t i1 = i0 + fp8_group < n ? i0 + fp8_group : n;
    float amax = 0.0f;
    for (std::size_t i = i0; i < i1; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const float scale = amax > 0.0f ? amax / fp8_e4m3_max : 1.0f;
    const float inv = 1.0f / scale;
    scales[g] = scale;
    for (std::size_t i = i0; i < i1; ++i) q[i] = float_to_e4m3(x[i] * inv);
  }
}

void dequantize_e4m3(std::span<const uint8_t> q, std::span<const float> scales, std::span<float> x) {
  const std::size_t n = q.size();
  for (std::size_t i = 0; i < n; ++i) x[i] = decode_table[q[i]] * scales[i / fp8_group];
}

}  // namespace sluice::kernels::cpu
