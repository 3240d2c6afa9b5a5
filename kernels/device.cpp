#include "kernels/device.hpp"

#include <thread>

#include "kernels/cuda_backend.hpp"

namespace sluice::kernels {

bool cuda_compiled() {
#ifdef SLUICE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

result<std::string> cuda_library_versions() {
  auto api = cuda_backend();
  if (!api) return tl::unexpected(api.error());
  return (*api)->library_versions();
}

result<std::vector<device_info>> cuda_devices() {
  auto api = cuda_backend();
  if (!api) return tl::unexpected(api.error());
  return (*api)->devices();
}

std::vector<std::string> cpu_features() {
  std::vector<std::string> out;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) out.emplace_back("avx512f");
  if (__builtin_cpu_supports("avx2")) out.emplace_back("avx2");
  if (__builtin_cpu_supports("fma")) out.emplace_back("fma");
  return out;
}

std::vector<device_info> list_devices() {
  std::string features;
  for (const auto& f : cpu_features()) features += (features.empty() ? "" : ", ") + f;
  std::vector<device_info> out{{device_kind::cpu, 0, "cpu (" + features + ")",
                                static_cast<int>(std::thread::hardware_concurrency()), 0.0}};
  if (auto gpus = cuda_devices()) out.insert(out.end(), gpus->begin(), gpus->end());
  return out;
}

}  // namespace sluice::kernels
