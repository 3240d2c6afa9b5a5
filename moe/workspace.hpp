#pragma once
/// Scratch memory of the forward, reused from call to call so that steady-state inference
/// allocates nothing: buffers only ever grow, to the largest call seen. One per stream (or
/// per thread running offline forwards); never shared between threads.

#include <cstddef>
#include <vector>

#include "moe/routed_experts.hpp"
#include "moe/routing.hpp"

namespace sluice::moe {

struct workspace {
  // offline input: subsampled frames and their descriptors
  std::vector<float> input_x, input_acoustic;
  // frontend convolutions
  std::vector<float> im2col, conv1_out, conv2_out;
  // encoder
  std::vector<float> xn, delta;
  // attention
  std::vector<float> qkv, att, keys_t, scores;
  // MoE: shared experts, context mean, routers
  std::vector<float> shared_hidden, context, s1, s2, select_g, select_e;
  routing route;
  // routed experts: gathered tokens, hidden activations, outputs, per-token sums
  expert_groups groups;
  std::vector<int64_t> cursor;
  std::vector<float> gathered, hidden, expert_out, routed;
};

/// v.data() with room for at least n values (contents unspecified).
inline float* scratch(std::vector<float>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace sluice::moe
