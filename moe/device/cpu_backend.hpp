#pragma once
/// The CPU implementation of kernels::backend: the engine's own CPU forward code (moe/'s
/// attention, routing, experts and frontend functions, kernels/cpu's ops) behind the device
/// table, so that a forward written against the table (moe/device/device_model.hpp) runs here
/// exactly as forward_offline does, and every other backend is compared with it op by op.
/// Buffers are host memory (64-byte aligned); ops run synchronously on the calling thread.

#include <memory>

#include "kernels/backend.hpp"
#include "moe/compute.hpp"

namespace sluice::moe {

/// A CPU backend computing with `options` (SIMD level, GEMM choices).
std::unique_ptr<kernels::backend> make_cpu_backend(const compute_options& options = {});

}  // namespace sluice::moe
