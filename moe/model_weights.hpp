#pragma once
/// The model's weights, laid out for the CPU forward. Read-only once loaded.
///
/// Every matrix is stored as the right-hand side of `x [n, in] * W [in, out]`, i.e. the
/// transpose of nn.Linear's [out, in], so both cpu_ops::matmul and OpenBLAS read whole rows of
/// output columns. Routed experts are packed into one buffer per projection, expert after
/// expert, so a grouped GEMM walks them with a fixed stride.

#include <cstdint>
#include <vector>

namespace sluice::moe {

/// y = x W + b.
struct linear_weights {
  int64_t in = 0, out = 0;
  std::vector<float> w;  ///< f32 [in, out]
  std::vector<float> b;  ///< f32 [out]; empty when the layer has no bias
};

struct norm_weights {
  std::vector<float> gamma;  ///< f32 [d]
  std::vector<float> beta;   ///< f32 [d]
};

/// One SwiGLU feed-forward: down(silu(x W_gate) * (x W_up)).
struct swiglu_weights {
  int64_t hidden = 0;
  std::vector<float> gate_up;  ///< f32 [d, 2 * hidden]: columns [0, hidden) gate, [hidden, 2 hidden) up
  std::vector<float> down;     ///< f32 [hidden, d]
};

/// All routed experts of a layer, each a SwiGLU of the same sizes, packed contiguously.
struct expert_bank {
  int64_t n_experts = 0, d = 0, hidden = 0;
  std::vector<float> gate_up;  ///< f32 [n_experts, d, 2 * hidden] (per expert as in swiglu_weights)
  std::vector<float> down;     ///< f32 [n_experts, hidden, d]

  const float* gate_up_of(int64_t e) const { return gate_up.data() + e * d * 2 * hidden; }
  const float* down_of(int64_t e) const { return down.data() + e * hidden * d; }
};

struct moe_weights {
  std::vector<swiglu_weights> shared;
  expert_bank experts;
  linear_weights router1;          ///< [d + n_acoustic -> n_groups], level 1 (acoustic)
  linear_weights router2;          ///< [2 d -> n_routed], level 2 (semantic)
  std::vector<float> group_bias;   ///< f32 [n_groups], selection only
  std::vector<float> expert_bias;  ///< f32 [n_routed], selection only
};

struct block_weights {
  norm_weights ln1;
  linear_weights qkv;   ///< [d -> 3 d]; output columns (q|k|v, head, head_dim)
  linear_weights proj;  ///< [d -> d]
  norm_weights ln2;
  moe_weights moe;
};

/// CMVN and the x4 convolutional subsampling. The convolutions run as im2col + matmul on a
/// channels-last layout, so their weights are reordered to match.
struct frontend_weights {
  std::vector<float> cmvn_mean;   ///< f32 [n_mels]
  std::vector<float> cmvn_istd;   ///< f32 [n_mels]
  std::vector<float> conv1;       ///< f32 [3 * 3, C]: rows (kt, kf), columns output channel
  std::vector<float> conv1_bias;  ///< f32 [C]
  std::vector<float> conv2;       ///< f32 [3 * 3 * C, C]: rows (kt, kf, input channel)
  std::vector<float> conv2_bias;  ///< f32 [C]
  linear_weights out;             ///< [F2 * C -> d]; input rows ordered (frequency, channel)
};

struct model_weights {
  frontend_weights frontend;
  std::vector<block_weights> blocks;
  norm_weights ln_out;
  linear_weights ctc;  ///< [d -> vocab_size]
};

}  // namespace sluice::moe
