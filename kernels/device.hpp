#pragma once
/// The compute devices this process can place expert shards on.
/// The CPU is always one; CUDA GPUs appear when the build has SLUICE_CUDA and a driver and
/// device are present at run time.

#include <string>
#include <vector>

#include "config/error.hpp"

namespace sluice::kernels {

enum class device_kind { cpu, cuda };

struct device_info {
  device_kind kind = device_kind::cpu;
  int index = 0;              ///< CUDA ordinal; 0 for the CPU
  std::string name;           ///< "cpu (avx512f, avx2, fma)" or the GPU's name
  int cores = 0;              ///< logical CPU cores, or GPU multiprocessors
  double memory_gib = 0.0;    ///< total device memory (0 for the CPU: not reported)
};

/// True when this binary was built with SLUICE_CUDA (the plugin may still fail to load).
bool cuda_compiled();

/// Versions of the CUDA runtime, cuBLAS and NCCL this binary links, e.g.
/// "cudart 13000, cublas 130100, nccl 22809"; an errc::unavailable error when built without CUDA.
result<std::string> cuda_library_versions();

/// CUDA devices visible now; errc::unavailable (with the reason) when none can be used.
result<std::vector<device_info>> cuda_devices();

/// The CPU, then every usable CUDA device.
std::vector<device_info> list_devices();

/// SIMD features of this CPU that our kernels use ("avx512f", "avx2", "fma").
std::vector<std::string> cpu_features();

}  // namespace sluice::kernels
