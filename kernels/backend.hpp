#pragma once
/// One compute device behind one small interface (as ggml's backend interface): buffers that
/// live on the device, and a table of the ops the acoustic model's forward is made of, each on
/// device pointers and each returning a status. The CPU implementation (moe/device/
/// cpu_backend.hpp: the engine's own CPU forward code behind this table) is the reference every
/// other implementation is tested against, op by op (tests/gpu); the CUDA one lives in the
/// plugin (kernels/cuda/backend_cuda.cu) and is created through kernels/cuda_backend.hpp.
///
/// Contract for every op: pointers are this backend's buffers (alloc()), arrays are row-major
/// f32 unless said otherwise, shapes are in the comments. Ops are queued in order on the
/// backend's one stream: an op may return before its work is done; download() and
/// synchronize() wait for everything queued before them. A backend object is used by one thread
/// at a time. Header compiled as C++17 too (nvcc).

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cpu/ops.hpp"

namespace sluice::kernels {

enum class status : int {
  ok = 0,
  unavailable,       ///< no device, no driver, or the op is not supported by this backend
  invalid_argument,  ///< shapes or pointers the op cannot take (message in last_error())
  out_of_memory,     ///< the device could not allocate
  device_error,      ///< the device reported a failure (message in last_error())
};

const char* to_string(status s);

/// A run of consecutive rows of one stream inside a batch of rows.
struct row_segment {
  int32_t row0 = 0;  ///< first row in the batch
  int32_t n = 0;     ///< rows
  int32_t p0 = 0;    ///< stream position (subsampled frames since the utterance began) of row0
};

/// Chunked attention window, as moe::attention_window (chunk 0: full; left -1: unbounded).
struct window_spec {
  int32_t chunk_frames = 0;
  int32_t left_chunks = -1;
};

/// Shapes of the two-level routing (model.py's MoE gate).
struct route_spec {
  int32_t n_groups = 0, n_experts = 0, top_groups = 0, top_k = 0;
};

/// One stream's caches of one layer (device pointers), for the streaming forms of attention and
/// causal_context. k, v: the rotated keys and the values of the kv_len frames just before the
/// segment, f32 [kv_cap, heads * head_dim] each, oldest first; ctx: the LayerNormed hidden rows of
/// the ctx_len frames just before it, f32 [ctx_frames - 1, d]. The ops update the buffers, not
/// the lengths: afterwards k, v hold the last min(kv_keep, kv_len + n) frames (kv_keep <= kv_cap)
/// and ctx the last min(ctx_frames - 1, ctx_len + n) rows, and the caller sets the lengths so;
/// a segment of no rows leaves its caches as they are.
struct stream_cache {
  float* k = nullptr;
  float* v = nullptr;
  int32_t kv_len = 0, kv_cap = 0, kv_keep = 0;
  float* ctx = nullptr;
  int32_t ctx_len = 0;
};

/// How matmuls compute: f32 throughout (parity), or bf16 products with f32 accumulation
/// (tensor cores; inputs and outputs stay f32 in memory).
enum class math_mode : int { f32 = 0, bf16 };

class backend {
 public:
  virtual ~backend() = default;

  /// "cpu (avx512)", "cuda:0 NVIDIA H200".
  virtual std::string name() const = 0;
  /// The message of the last op that did not return ok.
  virtual const std::string& last_error() const = 0;

  // ---- buffers ----
  /// `bytes` of device memory (aligned for any element type) in *out; free with release().
  virtual status alloc(std::size_t bytes, void** out) = 0;
  virtual void release(void* p) = 0;
  /// Host -> device and device -> host copies; download waits for the ops queued before it.
  virtual status upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual status download(void* dst, const void* src, std::size_t bytes) = 0;
  /// Waits for every queued op.
  virtual status synchronize() = 0;

  /// Sets how later matmuls compute; status::unavailable when this backend has no such mode
  /// (the CPU backend computes f32 only).
  virtual status set_math(math_mode m) = 0;

  // ---- ops ----
  /// cpu::matmul_args's contract on device pointers: C = A B (+ bias) (+ C when accumulate).
  virtual status matmul(const cpu::matmul_args& g) = 0;
  /// Row-wise LayerNorm (biased variance, as torch): x, out f32 [rows, dim] (may alias).
  virtual status layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows,
                            int64_t dim, float eps) = 0;
  /// dst[i] += src[i], n values.
  virtual status add(float* dst, const float* src, int64_t n) = 0;
  /// In place: x = max(x, 0).
  virtual status relu(float* x, int64_t n) = 0;
  /// In place: x = 1 / (1 + e^-x).
  virtual status sigmoid(float* x, int64_t n) = 0;
  /// out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
  virtual status silu_mul(const float* gate, const float* up, float* out, int64_t n) = 0;
  /// In place, per row: log_softmax over n values. x f32 [rows, n].
  virtual status log_softmax(float* x, int64_t rows, int64_t n) = 0;

  /// Chunked self-attention with rotary positions of `heads` heads of head_dim (even) over the
  /// rows of qkv f32 [rows, 3 * heads * head_dim] (q | k | v per row, heads inside each): each
  /// segment's queries see only that segment's keys, and of them only those the window allows at
  /// their positions (model.py's chunk_mask). q and k are rotated in place (RoPE with `base`,
  /// angles in f32 as model.py's rope_tables) and q is scaled by 1 / sqrt(head_dim).
  /// out f32 [rows, heads * head_dim]. segs: HOST array of n_segs segments, disjoint, with
  /// p0 = the position of the segment's first row. caches: null (offline: a segment sees only
  /// its own rows), or a HOST array of one stream_cache per segment (streaming: its keys are the
  /// cache's frames, then its rows; the bounded window must not reach before the cache, and the
  /// cache keeps kv_keep frames afterwards). Streaming windows are bounded (left_chunks >= 0).
  virtual status attention(float* qkv, int64_t rows, const row_segment* segs, int64_t n_segs, window_spec w,
                           int32_t heads, int32_t head_dim, double base, const stream_cache* caches, float* out) = 0;

  /// Causal context mean of level-2 routing: out[r] = mean of the last ctx_frames rows up to r of
  /// r's stream: y's rows of its segment, and with caches (as above) the cache's rows before them.
  /// y, out f32 [rows, d]; segs: HOST array as above.
  virtual status causal_context(const float* y, const row_segment* segs, int64_t n_segs, int64_t d,
                                int32_t ctx_frames, const stream_cache* caches, float* out) = 0;

  /// Two-level expert selection from sigmoid scores s1 f32 [n, n_groups] and s2 f32
  /// [n, n_experts]: the top_groups groups by s1 + group_bias, then the top_k experts inside
  /// them by s2 + expert_bias (the lower index among equals), gate weights s2[e] s1[group(e)]
  /// normalised over the chosen (sum clamped at 1e-9), all as moe::route_tokens.
  /// groups i32 [n, top_groups], experts i32 [n, top_k] (best first), weights f32 [n, top_k].
  virtual status route(const float* s1, const float* s2, const float* group_bias, const float* expert_bias, int64_t n,
                       route_spec r, int32_t* groups, int32_t* experts, float* weights) = 0;

  /// Routed experts as a grouped GEMM: out f32 [n, d] = for each row t the sum over j < k of
  /// weights[t, j] * swiglu_{experts[t, j]}(x[t]), added in ascending expert order (model.py's
  /// index_add_ order). gate_up f32 [n_experts, d, 2 hidden] (gate | up columns), down f32
  /// [n_experts, hidden, d]; x f32 [n, d]; experts i32 [n, k]; weights f32 [n, k].
  virtual status experts(const float* gate_up, const float* down, int32_t n_experts, int64_t d, int64_t hidden,
                         const float* x, int64_t n, const int32_t* experts, const float* weights, int32_t k,
                         float* out) = 0;

  /// The x4 subsampling's patches (im2col) of one segment set. Stage 1: in f32 [rows, bins]
  /// (CMVN applied) -> patches f32 [sum of out rows, out_bins, 9] for a 3x3 stride-2 kernel;
  /// stage 2: in f32 [rows, bins, channels] -> patches f32 [.., out_bins, 9 * channels] with
  /// (kt, kf, channel) order. Each segment's output rows (conv_out(n) of them) follow the
  /// previous segment's; out_segs (HOST, n_segs) receives their row0/n (p0 copied).
  virtual status conv_patches(const float* in, const row_segment* segs, int64_t n_segs, int64_t bins,
                              int64_t channels, float* patches, row_segment* out_segs) = 0;

  /// FP8 E4M3 with one f32 scale per 128 values (kernels/cpu/fp8.hpp's codec, bit for bit):
  /// x f32 [n] -> q u8 [n], scales f32 [ceil(n / 128)]; and back.
  virtual status fp8_encode(const float* x, int64_t n, uint8_t* q, float* scales) = 0;
  virtual status fp8_decode(const uint8_t* q, const float* scales, int64_t n, float* x) = 0;
};

/// Output rows of one 3x3 stride-2 convolution over n rows (0 below 3).
inline int64_t conv_out_rows(int64_t n) { return n < 3 ? 0 : (n - 3) / 2 + 1; }

}  // namespace sluice::kernels
