// CUDA twins of the CPU ops. Host wrappers return errors as values: a missing driver or device
// is errc::unavailable, never an abort, so a CPU-only machine runs the same binary.

#include "kernels/cuda/cuda_ops.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

namespace sluice::kernels::cuda {
namespace {

constexpr int threads_per_block = 256;
constexpr double bytes_per_gib = 1024.0 * 1024.0 * 1024.0;

__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

tl::unexpected<error> cuda_fail(const char* what, cudaError_t e) {
  return fail(e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? errc::unavailable : errc::internal,
              std::string(what) + ": " + cudaGetErrorString(e));
}

// Device buffer freed on scope exit.
struct device_buffer {
  float* ptr = nullptr;
  ~device_buffer() {
    if (ptr) cudaFree(ptr);
  }
  cudaError_t alloc(int64_t n) { return cudaMalloc(&ptr, sizeof(float) * static_cast<size_t>(n)); }
};

}  // namespace

result<std::string> library_versions() {
  int rt = 0, nccl = 0, cublas_major = 0, cublas_minor = 0;
  cudaRuntimeGetVersion(&rt);
  ncclGetVersion(&nccl);
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  return "cudart " + std::to_string(rt) + ", cublas " + std::to_string(cublas_major) + "." +
         std::to_string(cublas_minor) + ", nccl " + std::to_string(nccl);
}

result<std::vector<device_info>> devices() {
  int count = 0;
  if (auto e = cudaGetDeviceCount(&count); e != cudaSuccess) return cuda_fail("cudaGetDeviceCount", e);
  std::vector<device_info> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (auto e = cudaGetDeviceProperties(&p, i); e != cudaSuccess) return cuda_fail("cudaGetDeviceProperties", e);
    out.push_back({device_kind::cuda, i, p.name, p.multiProcessorCount,
                   static_cast<double>(p.totalGlobalMem) / bytes_per_gib});
  }
  if (out.empty()) return fail(errc::unavailable, "no CUDA device is visible");
  return out;
}

result<void> silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  if (n == 0) return {};
  device_buffer g, u, o;
  for (auto* b : {&g, &u, &o})
    if (auto e = b->alloc(n); e != cudaSuccess) return cuda_fail("cudaMalloc", e);
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  if (auto e = cudaMemcpy(g.ptr, gate, bytes, cudaMemcpyHostToDevice); e != cudaSuccess) return cuda_fail("cudaMemcpy", e);
  if (auto e = cudaMemcpy(u.ptr, up, bytes, cudaMemcpyHostToDevice); e != cudaSuccess) return cuda_fail("cudaMemcpy", e);
  const int blocks = static_cast<int>((n + threads_per_block - 1) / threads_per_block);
  silu_mul_kernel<<<blocks, threads_per_block>>>(g.ptr, u.ptr, o.ptr, n);
  if (auto e = cudaGetLastError(); e != cudaSuccess) return cuda_fail("silu_mul_kernel", e);
  if (auto e = cudaMemcpy(out, o.ptr, bytes, cudaMemcpyDeviceToHost); e != cudaSuccess) return cuda_fail("cudaMemcpy", e);
  return {};
}

result<void> gemm(const cpu::gemm_args& g) {
  if (g.m == 0 || g.n == 0) return {};
  const int64_t a_n = g.m * g.k, b_n = g.k * g.n, c_n = g.m * g.n;
  device_buffer a, b, c;
  if (auto e = a.alloc(a_n); e != cudaSuccess) return cuda_fail("cudaMalloc", e);
  if (auto e = b.alloc(b_n); e != cudaSuccess) return cuda_fail("cudaMalloc", e);
  if (auto e = c.alloc(c_n); e != cudaSuccess) return cuda_fail("cudaMalloc", e);
  cudaMemcpy(a.ptr, g.a, sizeof(float) * a_n, cudaMemcpyHostToDevice);
  cudaMemcpy(b.ptr, g.b, sizeof(float) * b_n, cudaMemcpyHostToDevice);
  cudaMemcpy(c.ptr, g.c, sizeof(float) * c_n, cudaMemcpyHostToDevice);
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return fail(errc::internal, "cublasCreate failed");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const int lda = static_cast<int>(g.trans_a ? g.m : g.k);
  const int ldb = static_cast<int>(g.trans_b ? g.k : g.n);
  auto st = cublasSgemm(h, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                        static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &g.alpha, b.ptr, ldb,
                        a.ptr, lda, &g.beta, c.ptr, static_cast<int>(g.n));
  cublasDestroy(h);
  if (st != CUBLAS_STATUS_SUCCESS) return fail(errc::internal, "cublasSgemm failed with status " + std::to_string(st));
  if (auto e = cudaMemcpy(g.c, c.ptr, sizeof(float) * c_n, cudaMemcpyDeviceToHost); e != cudaSuccess)
    return cuda_fail("cudaMemcpy", e);
  return {};
}

}  // namespace sluice::kernels::cuda

extern "C" const sluice::kernels::cuda::api* sluice_cuda_api() {
  static const sluice::kernels::cuda::api table{sluice::kernels::cuda::library_versions,
                                                 sluice::kernels::cuda::devices, sluice::kernels::cuda::silu_mul,
                                                 sluice::kernels::cuda::gemm,
                                                 sluice::kernels::cuda::create_backend};
  return &table;
}
