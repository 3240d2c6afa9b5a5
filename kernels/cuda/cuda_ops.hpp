#pragma once
/// CUDA twins of kernels/cpu ops, callable from host C++ (this header includes no CUDA headers).
/// Built only with SLUICE_CUDA, into the plugin libsluice_cuda.so, which the engine loads with
/// dlopen when a GPU is asked for (kernels/cuda_backend.hpp): cuBLAS alone costs ~0.7 s and
/// ~200 MB of RSS at process start, which CPU-only runs must not pay. These entry points take
/// host arrays and copy through the device: they are the reference-checked building blocks; the
/// expert actors of the GPU issue keep tensors resident on the device and call the same kernels
/// on device pointers.

#include <cstdint>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "kernels/backend.hpp"
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

/// A kernels::backend on CUDA device `device` (its own stream and cuBLAS handle, f32 math);
/// null with the reason in *why when it cannot be made. The caller owns it.
backend* create_backend(int device, std::string* why);

/// The plugin's entry points, as one table (see kernels/cuda_backend.hpp).
struct api {
  result<std::string> (*library_versions)();
  result<std::vector<device_info>> (*devices)();
  result<void> (*silu_mul)(const float* gate, const float* up, float* out, int64_t n);
  result<void> (*gemm)(const cpu::gemm_args& g);
  backend* (*create_backend)(int device, std::string* why);
};

}  // namespace sluice::kernels::cuda

/// The symbol kernels/cuda_backend.cpp looks up in libsluice_cuda.so.
extern "C" const sluice::kernels::cuda::api* sluice_cuda_api();
