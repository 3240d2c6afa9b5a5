#pragma once
/// The CUDA backend, loaded on first use from the plugin libsluice_cuda.so (built with
/// SLUICE_CUDA), so that processes that never touch a GPU do not load cudart/cuBLAS/NCCL.
/// Where it is looked for: $SLUICE_CUDA_PLUGIN, then beside the running executable, then the
/// build tree it was compiled in. Thread-safe (loaded once).

#include <memory>

#include "config/error.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_ops.hpp"

namespace sluice::kernels {

/// The plugin's entry points; errc::unavailable with the reason (built without CUDA, plugin not
/// found, or dlopen's message, e.g. a missing libcudart) when it cannot be loaded.
result<const cuda::api*> cuda_backend();

/// A kernels::backend on CUDA device `device`; errc::unavailable with the reason (no plugin, no
/// driver, no such device).
result<std::unique_ptr<backend>> make_cuda_backend(int device = 0);

}  // namespace sluice::kernels
