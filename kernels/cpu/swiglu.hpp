#pragma once
/// The SwiGLU gate of an expert's feed-forward: out[i] = silu(gate[i]) * up[i].

#include <cstdint>

namespace sluice::kernels::cpu {

/// `gate`, `up`, `out`: f32 [n]; `out` may alias `gate` or `up`.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

}  // namespace sluice::kernels::cpu
