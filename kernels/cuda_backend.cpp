#include "kernels/cuda_backend.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::kernels {
namespace {

constexpr const char* plugin_name = "libsluice_cuda.so";

std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("SLUICE_CUDA_PLUGIN")) out.emplace_back(env);
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path() / plugin_name).string());
#ifdef SLUICE_CUDA_PLUGIN_PATH
  out.emplace_back(SLUICE_CUDA_PLUGIN_PATH);
#endif
  return out;
}

result<const cuda::api*> load() {
#ifndef SLUICE_HAVE_CUDA
  return fail(errc::unavailable, "this sluice was built without CUDA (SLUICE_CUDA=OFF)");
#else
  std::string why;
  for (const auto& path : candidate_paths()) {
    if (!std::filesystem::exists(path)) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      why += std::string(why.empty() ? "" : "; ") + dlerror();
      continue;
    }
    using entry_fn = const cuda::api* (*)();
    auto entry = reinterpret_cast<entry_fn>(dlsym(handle, "sluice_cuda_api"));
    const cuda::api* api = entry ? entry() : nullptr;
    if (api) return api;
    dlclose(handle);
    why += std::string(why.empty() ? "" : "; ") + path + " has no usable sluice_cuda_api entry point";
  }
  return fail(errc::unavailable, why.empty() ? std::string("CUDA plugin ") + plugin_name + " not found" : why);
#endif
}

}  // namespace

result<const cuda::api*> cuda_backend() {
  static std::once_flag once;
  static result<const cuda::api*> loaded = fail(errc::internal, "not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

result<std::unique_ptr<backend>> make_cuda_backend(int device) {
  auto api = cuda_backend();
  if (!api) return tl::unexpected(api.error());
  std::string why;
  backend* b = (*api)->create_backend(device, &why);
  if (!b) return fail(errc::unavailable, "CUDA backend: " + why);
  return std::unique_ptr<backend>(b);
}

}  // namespace sluice::kernels
