#include "moe/device/cpu_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "kernels/cpu/bf16_gemm.hpp"
#include "kernels/cpu/fp8.hpp"
#include "moe/attention.hpp"
#include "moe/decoder/ctc_frames.hpp"
#include "moe/frontend.hpp"
#include "moe/moe_layer.hpp"
#include "moe/routed_experts.hpp"
#include "moe/routing.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {
namespace {

using kernels::row_segment;
using kernels::status;

constexpr std::size_t buffer_alignment = 64;

class cpu_backend final : public kernels::backend {
 public:
  explicit cpu_backend(const compute_options& o) : ctx_(o) {}

  std::string name() const override { return std::string("cpu (") + kernels::cpu::to_string(ctx_.ops().level) + ")"; }
  const std::string& last_error() const override { return error_; }

  status alloc(std::size_t bytes, void** out) override {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + buffer_alignment - 1) / buffer_alignment * buffer_alignment;
    *out = std::aligned_alloc(buffer_alignment, rounded);
    return *out ? status::ok : bad(status::out_of_memory, "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  void release(void* p) override { std::free(p); }
  status upload(void* dst, const void* src, std::size_t bytes) override { return copy(dst, src, bytes); }
  status download(void* dst, const void* src, std::size_t bytes) override { return copy(dst, src, bytes); }
  status synchronize() override { return status::ok; }
  // bf16: matmul rounds A and B to bf16 and accumulates in f32, as the CUDA backend's cuBLAS
  // fast-bf16 mode does (its CPU twin; experts() stays f32 on both). B is packed per call: this
  // is the parity path, not the engine's (the engine packs its weights once, moe/bf16_weights).
  status set_math(kernels::math_mode m) override {
    if (m != kernels::math_mode::f32 && m != kernels::math_mode::bf16) return bad(status::invalid_argument, "set_math: unknown mode");
    math_ = m;
    return status::ok;
  }

  status matmul(const kernels::cpu::matmul_args& g) override {
    if (g.m < 0 || g.n < 0 || g.k < 0) return bad(status::invalid_argument, "matmul: negative size");
    if (g.m == 0 || g.n == 0) return status::ok;
    if (math_ == kernels::math_mode::bf16)
      kernels::cpu::matmul_bf16(g, kernels::cpu::pack_bf16(g.b, g.k, g.n, g.ldb));
    else
      ctx_.dense_matmul(g);
    return status::ok;
  }
  status layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                    float eps) override {
    if (rows < 0 || dim <= 0) return bad(status::invalid_argument, "layer_norm: bad shape");
    if (rows > 0) ctx_.ops().layer_norm(x, gamma, beta, out, rows, dim, eps);
    return status::ok;
  }
  status add(float* dst, const float* src, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
    return status::ok;
  }
  status relu(float* x, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
    return status::ok;
  }
  status sigmoid(float* x, int64_t n) override {
    if (n > 0) ctx_.ops().sigmoid(x, n);
    return status::ok;
  }
  status silu_mul(const float* gate, const float* up, float* out, int64_t n) override {
    if (n > 0) ctx_.ops().silu_mul(gate, up, out, n);
    return status::ok;
  }
  status log_softmax(float* x, int64_t rows, int64_t n) override {
    if (rows < 0 || n <= 0) return bad(status::invalid_argument, "log_softmax: bad shape");
    for (int64_t r = 0; r < rows; ++r) {
      std::span<float> row(x + r * n, static_cast<std::size_t>(n));
      moe::log_softmax(row, row);
    }
    return status::ok;
  }

  status attention(float* qkv, int64_t rows, const row_segment* segs, int64_t n_segs, kernels::window_spec w,
                   int32_t heads, int32_t head_dim, double base, const kernels::stream_cache* caches,
                   float* out) override {
    if (heads <= 0 || head_dim <= 0 || head_dim % 2 != 0) return bad(status::invalid_argument, "attention: bad heads");
    if (auto s = check_segments("attention", segs, n_segs, rows); s != status::ok) return s;
    if (caches && w.left_chunks < 0) return bad(status::invalid_argument, "attention: a streaming window must be bounded");
    architecture arch;
    arch.n_heads = heads;
    arch.d_model = heads * head_dim;
    arch.rope_base = base;
    const int64_t d = arch.d_model;
    ws_.fit(att_segs_, static_cast<std::size_t>(n_segs));
    if (caches) kv_.resize(std::max<std::size_t>(kv_.size(), static_cast<std::size_t>(n_segs)));
    for (int64_t i = 0; i < n_segs; ++i) {
      kv_cache* cache = &no_cache_;
      int64_t keep = 0;
      if (caches) {
        // The cache's [len, d] rows as moe's per-head cache.
        const auto& c = caches[i];
        if (c.kv_len < 0 || c.kv_keep < 0 || c.kv_keep > c.kv_cap || c.kv_len > c.kv_cap)
          return bad(status::invalid_argument, "attention: cache " + std::to_string(i) + " has bad sizes");
        cache = &kv_[i];
        cache->k.resize(heads);
        cache->v.resize(heads);
        for (int64_t h = 0; h < heads; ++h) {
          cache->k[h].resize(static_cast<std::size_t>(c.kv_len * head_dim));
          cache->v[h].resize(static_cast<std::size_t>(c.kv_len * head_dim));
          for (int64_t r = 0; r < c.kv_len; ++r) {
            std::copy_n(c.k + r * d + h * head_dim, head_dim, cache->k[h].data() + r * head_dim);
            std::copy_n(c.v + r * d + h * head_dim, head_dim, cache->v[h].data() + r * head_dim);
          }
        }
        cache->len = c.kv_len;
        keep = c.kv_keep;
      }
      att_segs_[i] = attention_segment{segs[i].row0, segs[i].n, segs[i].p0, {w.chunk_frames, w.left_chunks}, cache, keep};
    }
    make_rope_table(att_segs_, rows, head_dim, base, ws_);
    attention_heads(ctx_, arch, att_segs_, qkv, out, ws_);
    for (int64_t i = 0; caches && i < n_segs; ++i) {
      // A segment of no rows leaves its cache as it was.
      const kv_cache& cache = kv_[i];
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t r = 0; r < cache.len; ++r) {
          std::copy_n(cache.k[h].data() + r * head_dim, head_dim, caches[i].k + r * d + h * head_dim);
          std::copy_n(cache.v[h].data() + r * head_dim, head_dim, caches[i].v + r * d + h * head_dim);
        }
    }
    return status::ok;
  }

  status causal_context(const float* y, const row_segment* segs, int64_t n_segs, int64_t d, int32_t ctx_frames,
                        const kernels::stream_cache* caches, float* out) override {
    if (d <= 0 || ctx_frames <= 0) return bad(status::invalid_argument, "causal_context: bad shape");
    if (auto s = check_segments("causal_context", segs, n_segs, -1); s != status::ok) return s;
    for (int64_t i = 0; i < n_segs; ++i) {
      context_cache cache;
      if (caches) {
        if (caches[i].ctx_len < 0 || caches[i].ctx_len > ctx_frames - 1)
          return bad(status::invalid_argument, "causal_context: cache " + std::to_string(i) + " has a bad length");
        cache.rows.assign(caches[i].ctx, caches[i].ctx + int64_t{caches[i].ctx_len} * d);
        cache.n = caches[i].ctx_len;
      }
      moe::causal_context(y + int64_t{segs[i].row0} * d, segs[i].n, d, ctx_frames, cache, out + int64_t{segs[i].row0} * d);
      if (caches) std::copy_n(cache.rows.begin(), cache.n * d, caches[i].ctx);
    }
    return status::ok;
  }

  status route(const float* s1, const float* s2, const float* group_bias, const float* expert_bias, int64_t n,
               kernels::route_spec spec, int32_t* groups, int32_t* experts, float* weights) override {
    if (spec.n_groups <= 0 || spec.n_experts % spec.n_groups != 0 || spec.top_groups <= 0 ||
        spec.top_groups > spec.n_groups || spec.top_k <= 0 ||
        spec.top_k > spec.top_groups * (spec.n_experts / spec.n_groups))
      return bad(status::invalid_argument, "route: bad shape");
    routing& r = ws_.route;
    r.n = n;
    r.n_groups = spec.n_groups;
    r.n_experts = spec.n_experts;
    r.top_groups = spec.top_groups;
    r.top_k = spec.top_k;
    ws_.fit(r.group_scores, n * spec.n_groups);
    ws_.fit(r.expert_scores, n * spec.n_experts);
    std::copy_n(s1, n * spec.n_groups, r.group_scores.begin());
    std::copy_n(s2, n * spec.n_experts, r.expert_scores.begin());
    select_experts(group_bias, expert_bias, ws_, r);
    std::copy_n(r.groups.begin(), n * spec.top_groups, groups);
    std::copy_n(r.experts.begin(), n * spec.top_k, experts);
    std::copy_n(r.weights.begin(), n * spec.top_k, weights);
    return status::ok;
  }

  status experts(const float* gate_up, const float* down, int32_t n_experts, int64_t d, int64_t hidden, const float* x,
                 int64_t n, const int32_t* chosen, const float* weights, int32_t k, float* out) override {
    if (n_experts <= 0 || d <= 0 || hidden <= 0 || k <= 0 || n < 0) return bad(status::invalid_argument, "experts: bad shape");
    const int64_t pairs = n * k;
    for (int64_t p = 0; p < pairs; ++p)
      if (chosen[p] < 0 || chosen[p] >= n_experts) return bad(status::invalid_argument, "experts: expert out of range");
    ws_.fit(pair_row_, static_cast<std::size_t>(pairs));
    for (int64_t p = 0; p < pairs; ++p) pair_row_[p] = static_cast<int32_t>(p / k);
    grouped_experts_forward(ctx_, expert_bank_view{gate_up, down, n_experts, d, hidden}, x, n, pair_row_.data(), chosen,
                            weights, pairs, out, ws_);
    return status::ok;
  }

  status conv_patches(const float* in, const row_segment* segs, int64_t n_segs, int64_t bins, int64_t channels,
                      float* patches, row_segment* out_segs) override {
    if (bins < 3 || channels <= 0) return bad(status::invalid_argument, "conv_patches: bad shape");
    if (auto s = check_segments("conv_patches", segs, n_segs, -1); s != status::ok) return s;
    const int64_t out_bins = (bins - 3) / 2 + 1, patch = out_bins * 9 * channels;
    int32_t row = 0;
    for (int64_t i = 0; i < n_segs; ++i) {
      const auto n_out = static_cast<int32_t>(kernels::conv_out_rows(segs[i].n));
      moe::conv_patches(in + int64_t{segs[i].row0} * bins * channels, n_out, bins, channels, patches + row * patch);
      out_segs[i] = row_segment{row, n_out, segs[i].p0};
      row += n_out;
    }
    return status::ok;
  }

  status fp8_encode(const float* x, int64_t n, uint8_t* q, float* scales) override {
    const auto un = static_cast<std::size_t>(n);
    kernels::cpu::quantize_e4m3({x, un}, {q, un}, {scales, kernels::cpu::fp8_scale_count(un)});
    return status::ok;
  }
  status fp8_decode(const uint8_t* q, const float* scales, int64_t n, float* x) override {
    const auto un = static_cast<std::size_t>(n);
    kernels::cpu::dequantize_e4m3({q, un}, {scales, kernels::cpu::fp8_scale_count(un)}, {x, un});
    return status::ok;
  }

 private:
  status copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return status::ok;
  }
  status bad(status s, std::string why) {
    error_ = std::move(why);
    return s;
  }
  // Segments with non-negative sizes, inside [0, rows) when rows >= 0.
  status check_segments(const char* op, const row_segment* segs, int64_t n_segs, int64_t rows) {
    for (int64_t i = 0; i < n_segs; ++i)
      if (segs[i].row0 < 0 || segs[i].n < 0 || segs[i].p0 < 0 || (rows >= 0 && segs[i].row0 + int64_t{segs[i].n} > rows))
        return bad(status::invalid_argument, std::string(op) + ": segment " + std::to_string(i) + " out of range");
    return status::ok;
  }

  compute_ctx ctx_;
  kernels::math_mode math_ = kernels::math_mode::f32;
  workspace ws_;
  std::vector<attention_segment> att_segs_;
  std::vector<int32_t> pair_row_;
  kv_cache no_cache_;         // the offline attention reads keys from qkv: never touched
  std::vector<kv_cache> kv_;  // streaming: each segment's cache in moe's per-head layout
  std::string error_;
};

}  // namespace

std::unique_ptr<kernels::backend> make_cpu_backend(const compute_options& options) {
  return std::make_unique<cpu_backend>(options);
}

}  // namespace sluice::moe
