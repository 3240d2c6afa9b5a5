#pragma once
/// Constants of the vector exp() shared by the AVX2 and AVX-512 paths: Cody-Waite range
/// reduction x = n ln2 + r, then the degree-6 minimax polynomial of Cephes' expf for e^r.
/// Relative error about 2 ulp against std::exp on the clamped range.

namespace sluice::kernels::cpu::exp_consts {

inline constexpr float max_arg = 88.0f;               ///< below ln(FLT_MAX), so 2^n stays finite
inline constexpr float min_arg = -87.3365447505531f;  ///< ln(FLT_MIN): smaller inputs clamp here
inline constexpr float log2e = 1.44269504088896341f;
inline constexpr float ln2_hi = 0.693359375f;         ///< ln 2 in two parts for exact n*ln2
inline constexpr float ln2_lo = -2.12194440e-4f;
inline constexpr float p0 = 1.9875691500e-4f;
inline constexpr float p1 = 1.3981999507e-3f;
inline constexpr float p2 = 8.3334519073e-3f;
inline constexpr float p3 = 4.1665795894e-2f;
inline constexpr float p4 = 1.6666665459e-1f;
inline constexpr float p5 = 5.0000001201e-1f;

}  // namespace sluice::kernels::cpu::exp_consts
