#pragma once
/// CUDA twins of kernels/cpu ops, callable from host C++ (this header includes no CUDA headers).
/// Compiled only with SLUICE_CUDA. These entry points take host arrays and copy through the
/// device: they are the reference-checked building blocks; the expert actors of the GPU issue
/// keep tensors resident on the device and call the same kernels on device pointers.

#include <cstdint>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/device.hpp"

namespace sluice::kernels::cuda {

/// "cudart X, cublas Y, nccl Z" as the linked libraries report them.
result<std::string> library_versions();

/// Visible devices; errc::unavailable with the driver's reason when there are none.
result<std::vector<device_info>> devices();

/// out[i] = silu(gate[i]) * up[i] on device 0. f32 [n] host arrays.
result<void> silu_mul(const float* gate, const float* up, float* out, int64_t n);

/// The cuBLAS twin of cpu::gemm on device 0 (same row-major contract, host arrays).
result<void> gemm(const cpu::gemm_args& g);

}  // namespace sluice::kernels::cuda
