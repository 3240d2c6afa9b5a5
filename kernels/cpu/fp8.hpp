#pragma once
/// FP8 E4M3 (the "fn" variant of OCP FP8: bias 7, no infinities, largest finite 448, 0x7F and
/// 0xFF are NaN) with one f32 scale per group of 128 consecutive values, as the token blocks
/// use on the wire: quantize before sending, dequantize on arrival. Values are rounded to the
/// nearest representable one (ties to even); a group's scale maps its largest magnitude to 448,
/// so no value saturates. Relative error per value: at most 2^-4 for magnitudes above
/// scale * 2^-6, absolute error at most scale * 2^-10 below it.

#include <cstddef>
#include <cstdint>
#include <span>

namespace sluice::kernels::cpu {

inline constexpr std::size_t fp8_group = 128;  ///< values per scale
inline constexpr float fp8_e4m3_max = 448.0f;

/// Scales needed for n values.
inline std::size_t fp8_scale_count(std::size_t n) { return (n + fp8_group - 1) / fp8_group; }

/// One value already divided by its scale (|x| <= 448 expected; larger saturates, NaN -> 0x7F).
uint8_t float_to_e4m3(float x);
float e4m3_to_float(uint8_t b);

/// x f32 [n] -> q u8 [n], scales f32 [fp8_scale_count(n)]. Non-finite inputs must not occur
/// (the model's activations are checked finite upstream); a group of zeros gets scale 1.
void quantize_e4m3(std::span<const float> x, std::span<uint8_t> q, std::span<float> scales);
/// The inverse: q u8 [n], scales f32 [fp8_scale_count(n)] -> x f32 [n].
void dequantize_e4m3(std::span<const uint8_t> q, std::span<const float> scales, std::span<float> x);

}  // namespace sluice::kernels::cpu
