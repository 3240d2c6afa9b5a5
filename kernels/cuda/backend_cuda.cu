// kernels::backend on one CUDA device: every op of the acoustic model's forward as kernels on
// the backend's own stream, matmuls on cuBLAS. Written to be checked against the CPU backend
// op by op (tests/gpu), so each kernel computes in the CPU code's order where that is cheap
// (the experts' contributions are added per row in ascending expert order, the context mean is
// a sum then one multiply, RoPE angles in f32 with cos/sin in f64 as model.py's tables).
// Simple kernels first (kernels/cuda/forward_kernels.cuh): one thread per value or a block per
// row; tuning is for the device runs. This file: the backend class and its entry point.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/cuda/forward_kernels.cuh"

namespace sluice::kernels::cuda {
namespace {

class cuda_device_backend final : public backend {
 public:
  cuda_device_backend(int device, cudaStream_t stream, cublasHandle_t blas, int32_t* bad_ids, std::string name)
      : device_(device), stream_(stream), blas_(blas), bad_ids_(bad_ids), name_(std::move(name)) {}
  ~cuda_device_backend() override {
    cudaSetDevice(device_);
    cudaFree(bad_ids_);
    for (auto* b : {&cache_scratch_, &segs_, &in_rows_, &counts_, &offsets_, &cursor_, &slot_pair_, &pair_slot_, &expert_out_})
      if (b->ptr) cudaFree(b->ptr);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return name_; }
  const std::string& last_error() const override { return error_; }

  status alloc(std::size_t bytes, void** out) override {
    bind();
    if (auto e = cudaMalloc(out, bytes ? bytes : 1); e != cudaSuccess) return cuda_status("cudaMalloc", e);
    return status::ok;
  }
  void release(void* p) override {
    bind();
    cudaStreamSynchronize(stream_);  // queued ops may still read it
    cudaFree(p);
  }
  status upload(void* dst, const void* src, std::size_t bytes) override {
    bind();
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "upload");
  }
  status download(void* dst, const void* src, std::size_t bytes) override {
    bind();
    if (auto s = check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "download"); s != status::ok)
      return s;
    return synchronize();
  }
  status synchronize() override {
    bind();
    if (auto s = check(cudaStreamSynchronize(stream_), "synchronize"); s != status::ok) return s;
    if (!check_ids_) return status::ok;
    // An experts() call met an expert id out of range: its pairs were skipped; say so once.
    check_ids_ = false;
    int32_t bad = 0;
    if (auto s = check(cudaMemcpy(&bad, bad_ids_, sizeof bad, cudaMemcpyDeviceToHost), "synchronize"); s != status::ok)
      return s;
    if (!bad) return status::ok;
    cudaMemset(bad_ids_, 0, sizeof bad);
    return fail_with(status::invalid_argument, "experts: an expert id was outside [0, n_experts)");
  }

  status set_math(math_mode m) override {
    bind();
    // bf16: cuBLAS rounds the f32 inputs to bf16 on the tensor cores and accumulates in f32.
    if (cublasSetMathMode(blas_, m == math_mode::bf16 ? CUBLAS_DEFAULT_MATH : CUBLAS_PEDANTIC_MATH) !=
        CUBLAS_STATUS_SUCCESS)
      return fail_with(status::device_error, "cublasSetMathMode failed");
    math_ = m;
    return status::ok;
  }

  status matmul(const cpu::matmul_args& g) override {
    bind();
    if (g.m < 0 || g.n < 0 || g.k < 0) return bad("matmul: negative size");
    constexpr int64_t int_max = 0x7fffffff;
    for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc})
      if (v > int_max) return bad("matmul: a size or leading dimension above 2^31 - 1");
    if (g.m == 0 || g.n == 0) return status::ok;
    // Row-major C = A B is column-major C^T = B^T A^T: B is a column-major [n, k] with ld ldb.
    const float one = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
    // cuBLAS wants leading dimensions >= 1 even when k is 0 (then C = beta C).
    const bool empty_k = g.k == 0;
    const int ldb = empty_k ? int(g.n) : int(g.ldb), lda = empty_k ? 1 : int(g.lda);
    const auto st =
        math_ == math_mode::bf16
            ? cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, int(g.n), int(g.m), int(g.k), &one, g.b, CUDA_R_32F, ldb, g.a,
                           CUDA_R_32F, lda, &beta, g.c, CUDA_R_32F, int(g.ldc), CUBLAS_COMPUTE_32F_FAST_16BF,
                           CUBLAS_GEMM_DEFAULT)
            : cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, int(g.n), int(g.m), int(g.k), &one, g.b, ldb, g.a, lda, &beta,
                          g.c, int(g.ldc));
    if (st != CUBLAS_STATUS_SUCCESS) return fail_with(status::device_error, "cuBLAS gemm: status " + std::to_string(int(st)));
    if (g.bias) add_bias_kernel<<<blocks_for(g.m * g.n), block_threads, 0, stream_>>>(g.c, g.ldc, g.bias, g.m, g.n);
    return launched("matmul bias");
  }
  status layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                    float eps) override {
    bind();
    if (rows < 0 || dim <= 0) return bad("layer_norm: bad shape");
    if (rows == 0) return status::ok;
    layer_norm_kernel<<<unsigned(rows), row_threads, 0, stream_>>>(x, gamma, beta, out, dim, eps);
    return launched("layer_norm");
  }
  status add(float* dst, const float* src, int64_t n) override {
    bind();
    if (n > 0) add_kernel<<<blocks_for(n), block_threads, 0, stream_>>>(dst, src, n);
    return launched("add");
  }
  status relu(float* x, int64_t n) override {
    bind();
    if (n > 0) relu_kernel<<<blocks_for(n), block_threads, 0, stream_>>>(x, n);
    return launched("relu");
  }
  status sigmoid(float* x, int64_t n) override {
    bind();
    if (n > 0) sigmoid_kernel<<<blocks_for(n), block_threads, 0, stream_>>>(x, n);
    return launched("sigmoid");
  }
  status silu_mul(const float* gate, const float* up, float* out, int64_t n) override {
    bind();
    if (n > 0) silu_mul_kernel<<<blocks_for(n), block_threads, 0, stream_>>>(gate, up, out, n);
    return launched("silu_mul");
  }
  status log_softmax(float* x, int64_t rows, int64_t n) override {
    bind();
    if (rows < 0 || n <= 0) return bad("log_softmax: bad shape");
    if (rows > 0) log_softmax_kernel<<<blocks_for(rows), block_threads, 0, stream_>>>(x, rows, n);
    return launched("log_softmax");
  }

  status attention(float* qkv, int64_t rows, const row_segment* segs, int64_t n_segs, window_spec w, int32_t heads,
                   int32_t head_dim, double base, const stream_cache* caches, float* out) override {
    bind();
    if (heads <= 0 || head_dim <= 0 || head_dim % 2 || head_dim > max_head_dim) return bad("attention: bad heads");
    if (caches && w.left_chunks < 0) return bad("attention: a streaming window must be bounded");
    if (rows == 0) return status::ok;
    const device_seg* d_segs = nullptr;
    int64_t kv_rows = 0;
    if (auto s = put_segments(segs, n_segs, rows, caches, heads * int64_t(head_dim), 0, &d_segs, &kv_rows);
        s != status::ok)
      return s;
    if (!d_segs) return status::ok;
    const float inv_scale = 1.0f / static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
    rope_kernel<<<blocks_for(rows * heads * head_dim / 2), block_threads, 0, stream_>>>(
        qkv, rows, d_segs, device_segs_, heads, head_dim, static_cast<float>(base), inv_scale);
    if (auto s = launched("rope"); s != status::ok) return s;
    attention_kernel<<<dim3(unsigned(rows), unsigned(heads)), row_threads, 0, stream_>>>(qkv, d_segs, device_segs_, w,
                                                                                         heads, head_dim, out);
    if (auto s = launched("attention"); s != status::ok) return s;
    return update_caches(qkv, nullptr, d_segs, heads * int64_t(head_dim), true, kv_rows);
  }

  status causal_context(const float* y, const row_segment* segs, int64_t n_segs, int64_t d, int32_t ctx_frames,
                        const stream_cache* caches, float* out) override {
    bind();
    if (d <= 0 || ctx_frames <= 0) return bad("causal_context: bad shape");
    int64_t rows = 0;
    for (int64_t i = 0; i < n_segs; ++i) rows = std::max(rows, int64_t(segs[i].row0) + segs[i].n);
    if (rows == 0) return status::ok;
    const device_seg* d_segs = nullptr;
    int64_t ctx_rows = 0;
    if (auto s = put_segments(segs, n_segs, rows, caches, d, ctx_frames, &d_segs, &ctx_rows); s != status::ok) return s;
    if (!d_segs) return status::ok;
    context_kernel<<<blocks_for(rows * d), block_threads, 0, stream_>>>(y, d_segs, device_segs_, rows, d, ctx_frames, out);
    if (auto s = launched("causal_context"); s != status::ok) return s;
    return update_caches(nullptr, y, d_segs, d, false, ctx_rows);
  }

  status route(const float* s1, const float* s2, const float* group_bias, const float* expert_bias, int64_t n,
               route_spec r, int32_t* groups, int32_t* experts, float* weights) override {
    bind();
    if (r.n_groups <= 0 || r.n_groups > max_groups || r.n_experts > max_experts || r.n_experts % r.n_groups ||
        r.top_groups <= 0 || r.top_groups > r.n_groups || r.top_k <= 0 || r.top_k > max_top_k ||
        r.top_k > r.top_groups * (r.n_experts / r.n_groups))
      return bad("route: shape outside this backend's limits");
    if (n > 0) route_kernel<<<blocks_for(n), block_threads, 0, stream_>>>(s1, s2, group_bias, expert_bias, n, r, groups,
                                                                          experts, weights);
    return launched("route");
  }

  status experts(const float* gate_up, const float* down, int32_t n_experts, int64_t d, int64_t hidden, const float* x,
                 int64_t n, const int32_t* chosen, const float* weights, int32_t k, float* out) override {
    bind();
    if (n_experts <= 0 || d <= 0 || hidden <= 0 || k <= 0 || k > max_top_k || n < 0) return bad("experts: bad shape");
    const std::size_t smem = sizeof(float) * expert_tile_rows * (d + 2 * hidden);
    if (smem > 48 * 1024) return bad("experts: d and hidden too large for one block's shared memory");
    if (n == 0) return status::ok;
    const int64_t pairs = n * k;
    for (auto [b, bytes] : {std::pair{&counts_, sizeof(int32_t) * (n_experts + 1)},
                            std::pair{&offsets_, sizeof(int32_t) * (n_experts + 1)},
                            std::pair{&cursor_, sizeof(int32_t) * (n_experts + 1)},
                            std::pair{&slot_pair_, sizeof(int32_t) * pairs}, std::pair{&pair_slot_, sizeof(int32_t) * pairs},
                            std::pair{&expert_out_, sizeof(float) * pairs * d}})
      if (auto s = grow(*b, bytes); s != status::ok) return s;
    auto* counts = static_cast<int32_t*>(counts_.ptr);
    auto* offsets = static_cast<int32_t*>(offsets_.ptr);
    auto* cursor = static_cast<int32_t*>(cursor_.ptr);
    auto* slot_pair = static_cast<int32_t*>(slot_pair_.ptr);
    auto* pair_slot = static_cast<int32_t*>(pair_slot_.ptr);
    auto* o = static_cast<float*>(expert_out_.ptr);
    if (auto s = check(cudaMemsetAsync(counts, 0, sizeof(int32_t) * n_experts, stream_), "memset"); s != status::ok)
      return s;
    count_kernel<<<blocks_for(pairs), block_threads, 0, stream_>>>(chosen, pairs, n_experts, counts, bad_ids_);
    check_ids_ = true;
    scan_kernel<<<1, 1, 0, stream_>>>(counts, n_experts, offsets, cursor);
    scatter_kernel<<<blocks_for(pairs), block_threads, 0, stream_>>>(chosen, pairs, n_experts, cursor, slot_pair,
                                                                      pair_slot);
    const int64_t tiles = (n + expert_tile_rows - 1) / expert_tile_rows;  // an expert has at most n rows
    expert_ffn_kernel<<<dim3(unsigned(n_experts), unsigned(std::min<int64_t>(tiles, max_grid_y))), block_threads, smem,
                        stream_>>>(gate_up, down, d, hidden, x, k, offsets, slot_pair, o);
    combine_kernel<<<blocks_for(n * d), block_threads, 0, stream_>>>(chosen, weights, pair_slot, k, o, n, d, out);
    return launched("experts");
  }

  status conv_patches(const float* in, const row_segment* segs, int64_t n_segs, int64_t bins, int64_t channels,
                      float* patches, row_segment* out_segs) override {
    bind();
    if (bins < 3 || channels <= 0) return bad("conv_patches: bad shape");
    std::vector<int32_t> first_row;
    int32_t row = 0;
    for (int64_t i = 0; i < n_segs; ++i) {
      if (segs[i].n < 0 || segs[i].row0 < 0) return bad("conv_patches: bad segment");
      const auto n_out = static_cast<int32_t>(conv_out_rows(segs[i].n));
      for (int32_t r = 0; r < n_out; ++r) first_row.push_back(segs[i].row0 + 2 * r);
      out_segs[i] = row_segment{row, n_out, segs[i].p0};
      row += n_out;
    }
    if (row == 0) return status::ok;
    if (auto s = grow(in_rows_, sizeof(int32_t) * first_row.size()); s != status::ok) return s;
    if (auto s = upload(in_rows_.ptr, first_row.data(), sizeof(int32_t) * first_row.size()); s != status::ok) return s;
    // The host vector must stay valid until the copy is done (pageable memory: the copy is
    // staged before cudaMemcpyAsync returns, but be explicit).
    if (auto s = synchronize(); s != status::ok) return s;
    const int64_t total = int64_t(row) * ((bins - 3) / 2 + 1) * 9 * channels;
    patches_kernel<<<blocks_for(total), block_threads, 0, stream_>>>(in, static_cast<const int32_t*>(in_rows_.ptr), row,
                                                                      bins, channels, patches);
    return launched("conv_patches");
  }

  status fp8_encode(const float* x, int64_t n, uint8_t* q, float* scales) override {
    bind();
    if (n > 0) fp8_encode_kernel<<<unsigned((n + fp8_group - 1) / fp8_group), fp8_group, 0, stream_>>>(x, n, q, scales);
    return launched("fp8_encode");
  }
  status fp8_decode(const uint8_t* q, const float* scales, int64_t n, float* x) override {
    bind();
    if (n > 0) fp8_decode_kernel<<<blocks_for(n), block_threads, 0, stream_>>>(q, scales, n, x);
    return launched("fp8_decode");
  }

 private:
  struct scratch {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };

  status grow(scratch& b, std::size_t bytes) {
    if (b.bytes >= bytes) return status::ok;
    if (b.ptr) {
      cudaStreamSynchronize(stream_);
      cudaFree(b.ptr);
      b = {};
    }
    if (auto e = cudaMalloc(&b.ptr, bytes); e != cudaSuccess) return cuda_status("cudaMalloc", e);
    b.bytes = bytes;
    return status::ok;
  }
  // Segments (with their caches when given) to the device, sorted by row0 (the kernels
  // binary-search them), empty ones dropped; *out null when none is left. ctx_frames 0: the
  // attention's caches (kv), else the context's; *update_rows: rows the cache update moves.
  status put_segments(const row_segment* segs, int64_t n_segs, int64_t rows, const stream_cache* caches, int64_t d,
                      int32_t ctx_frames, const device_seg** out, int64_t* update_rows) {
    *out = nullptr;
    *update_rows = 0;
    if (n_segs <= 0) return status::ok;
    sorted_.clear();
    for (int64_t i = 0; i < n_segs; ++i) {
      const row_segment& g = segs[i];
      if (g.n < 0 || g.row0 < 0 || g.p0 < 0 || int64_t(g.row0) + g.n > rows)
        return bad("segments: segment " + std::to_string(i) + " out of range");
      if (g.n == 0) continue;  // holds no row: the search must never land on it; its caches stay
      device_seg s{g.row0, g.n, g.p0, 0, 0, 0, 0, 0, 0, nullptr, nullptr, nullptr};
      if (caches) {
        const stream_cache& c = caches[i];
        if (ctx_frames == 0) {
          if (c.kv_len < 0 || c.kv_keep < 0 || c.kv_keep > c.kv_cap || c.kv_len > c.kv_cap || !c.k || !c.v)
            return bad("attention: cache " + std::to_string(i) + " has bad sizes");
          s.kv_len = c.kv_len;
          s.kv_out = std::min(c.kv_keep, c.kv_len + g.n);
          s.k = c.k;
          s.v = c.v;
        } else {
          if (c.ctx_len < 0 || c.ctx_len > ctx_frames - 1 || (ctx_frames > 1 && !c.ctx))
            return bad("causal_context: cache " + std::to_string(i) + " has a bad length");
          s.ctx_len = c.ctx_len;
          s.ctx_out = std::min(ctx_frames - 1, c.ctx_len + g.n);
          s.ctx = c.ctx;
        }
      }
      sorted_.push_back(s);
    }
    if (sorted_.empty()) return status::ok;
    std::sort(sorted_.begin(), sorted_.end(), [](const device_seg& a, const device_seg& b) { return a.row0 < b.row0; });
    for (std::size_t i = 0; i < sorted_.size(); ++i) {
      if (i > 0 && sorted_[i].row0 < sorted_[i - 1].row0 + sorted_[i - 1].n) return bad("segments: two segments overlap");
      sorted_[i].kv_at = sorted_[i].ctx_at = *update_rows;
      *update_rows += ctx_frames == 0 ? sorted_[i].kv_out : sorted_[i].ctx_out;
    }
    device_segs_ = static_cast<int>(sorted_.size());
    if (auto s = grow(segs_, sizeof(device_seg) * sorted_.size()); s != status::ok) return s;
    if (auto s = upload(segs_.ptr, sorted_.data(), sizeof(device_seg) * sorted_.size()); s != status::ok) return s;
    if (auto s = synchronize(); s != status::ok) return s;  // sorted_ is reused by the next call
    *out = static_cast<const device_seg*>(segs_.ptr);
    return status::ok;
  }

  // The caches' new contents (see the gather/scatter kernels); nothing when no segment streams.
  status update_caches(const float* qkv, const float* y, const device_seg* d_segs, int64_t d, bool kv, int64_t rows) {
    if (rows == 0) return status::ok;
    const int64_t width = kv ? 2 * d : d;
    if (auto s = grow(cache_scratch_, sizeof(float) * rows * width); s != status::ok) return s;
    auto* scratch = static_cast<float*>(cache_scratch_.ptr);
    cache_gather_kernel<<<blocks_for(rows * width), block_threads, 0, stream_>>>(qkv, y, d_segs, device_segs_, d, kv,
                                                                                  rows, scratch);
    if (auto s = launched("cache gather"); s != status::ok) return s;
    cache_scatter_kernel<<<blocks_for(rows * width), block_threads, 0, stream_>>>(d_segs, device_segs_, d, kv, rows,
                                                                                   scratch);
    return launched("cache scatter");
  }
  status bad(std::string why) { return fail_with(status::invalid_argument, std::move(why)); }
  status fail_with(status s, std::string why) {
    error_ = std::move(why);
    return s;
  }
  status cuda_status(const char* what, cudaError_t e) {
    return fail_with(e == cudaErrorMemoryAllocation ? status::out_of_memory : status::device_error,
                     std::string(what) + ": " + cudaGetErrorString(e));
  }
  status check(cudaError_t e, const char* what) { return e == cudaSuccess ? status::ok : cuda_status(what, e); }
  // The calling thread's current device is this backend's (actors move between threads).
  void bind() const { cudaSetDevice(device_); }
  status launched(const char* what) { return check(cudaGetLastError(), what); }

  int device_;
  cudaStream_t stream_;
  cublasHandle_t blas_;
  int32_t* bad_ids_;        // device flag: experts() met an id out of range
  bool check_ids_ = false;
  math_mode math_ = math_mode::f32;  // an experts() call is queued since the flag was last read
  std::string name_;
  std::string error_;
  std::vector<device_seg> sorted_;  // put_segments' non-empty segments, by row0
  int device_segs_ = 0;              // how many of them are on the device
  scratch cache_scratch_;
  scratch segs_, in_rows_, counts_, offsets_, cursor_, slot_pair_, pair_slot_, expert_out_;
};

}  // namespace

backend* create_backend(int device, std::string* why) {
  auto say = [&](const std::string& s) {
    if (why) *why = s;
    return nullptr;
  };
  int count = 0;
  if (auto e = cudaGetDeviceCount(&count); e != cudaSuccess) return say(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e));
  if (device < 0 || device >= count) return say("no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " visible)");
  if (auto e = cudaSetDevice(device); e != cudaSuccess) return say(std::string("cudaSetDevice: ") + cudaGetErrorString(e));
  cudaDeviceProp p{};
  if (auto e = cudaGetDeviceProperties(&p, device); e != cudaSuccess)
    return say(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e));
  cudaStream_t stream = nullptr;
  if (auto e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
    return say(std::string("cudaStreamCreate: ") + cudaGetErrorString(e));
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) {
    cudaStreamDestroy(stream);
    return say("cublasCreate failed");
  }
  int32_t* bad_ids = nullptr;
  // f32 mode for parity: no TF32 tensor-core shortcut inside cuBLAS.
  if (cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&bad_ids, sizeof(int32_t)) != cudaSuccess || cudaMemset(bad_ids, 0, sizeof(int32_t)) != cudaSuccess) {
    if (bad_ids) cudaFree(bad_ids);
    cublasDestroy(blas);
    cudaStreamDestroy(stream);
    return say("cuBLAS stream/math mode or the device flag could not be set up");
  }
  return new cuda_device_backend(device, stream, blas, bad_ids, "cuda:" + std::to_string(device) + " " + p.name);
}

}  // namespace sluice::kernels::cuda
