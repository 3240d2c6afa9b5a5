// kernels::backend on one CUDA device: every op of the acoustic model's forward as kernels on
// the backend's own stream, matmuls on cuBLAS. Written to be checked against the CPU backend
// op by op (tests/gpu), so each kernel computes in the CPU code's order where that is cheap
// (the experts' contributions are added per row in ascending expert order, the context mean is
// a sum then one multiply, RoPE angles in f32 with cos/sin in f64 as model.py's tables).
// Simple kernels first: one thread per value or a block per row; tuning is for the device runs.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_ops.hpp"

namespace sluice::kernels::cuda {
namespace {

constexpr int block_threads = 256;
constexpr int row_threads = 128;      // a block per row (LayerNorm, attention queries)
constexpr int max_head_dim = 128;     // attention: one thread per head dimension
constexpr int key_tile = 128;         // attention: keys scored per pass (online softmax)
constexpr int max_groups = 64;        // route: per-thread arrays
constexpr int max_experts = 256;
constexpr int max_top_k = 16;
constexpr int expert_tile_rows = 16;  // experts: rows of one expert per block
constexpr int max_grid_y = 65535;
constexpr int fp8_group = 128;
constexpr float fp8_max = 448.0f;

constexpr int64_t max_blocks = 65535 * 8;  // grid-stride kernels: more blocks add nothing
int blocks_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + block_threads - 1) / block_threads, max_blocks)); }

__global__ void add_kernel(float* dst, const float* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}
__global__ void relu_kernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = fmaxf(x[i], 0.0f);
}
__global__ void sigmoid_kernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = 1.0f / (1.0f + expf(-x[i]));
}
__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}
__global__ void add_bias_kernel(float* c, int64_t ldc, const float* bias, int64_t m, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m * n; i += int64_t(gridDim.x) * blockDim.x)
    c[(i / n) * ldc + i % n] += bias[i % n];
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ float block_sum(float v, float* shared32) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared32[warp] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < warps; ++w) s += shared32[w];
  return s;
}
__device__ float block_max(float v, float* shared32) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared32[warp] = v;
  __syncthreads();
  float s = shared32[0];
  for (int w = 1; w < warps; ++w) s = fmaxf(s, shared32[w]);
  return s;
}

__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* out, int64_t dim,
                                  float eps) {
  __shared__ float red[32];
  const float* row = x + blockIdx.x * dim;
  float* dst = out + blockIdx.x * dim;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) s += row[i];
  const float mean = block_sum(s, red) / static_cast<float>(dim);
  float v = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) v += (row[i] - mean) * (row[i] - mean);
  const float inv = rsqrtf(block_sum(v, red) / static_cast<float>(dim) + eps);
  __syncthreads();  // out may alias x: every thread has read its values
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = (row[i] - mean) * inv * gamma[i] + beta[i];
}

__global__ void log_softmax_kernel(float* x, int64_t rows, int64_t n) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    float* v = x + r * n;
    float mx = v[0];
    for (int64_t i = 1; i < n; ++i) mx = fmaxf(mx, v[i]);
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += expf(v[i] - mx);
    const float lse = mx + logf(s);
    for (int64_t i = 0; i < n; ++i) v[i] -= lse;
  }
}

// A segment on the device, with its stream's caches when it streams (k, v, ctx null offline).
// kv_out / ctx_out: frames the caches keep afterwards; kv_at / ctx_at: where those rows go in
// the update scratch (prefix sums, ascending with row0).
struct device_seg {
  int32_t row0, n, p0;
  int32_t kv_len, kv_out, ctx_len, ctx_out;
  int64_t kv_at, ctx_at;
  float* k;
  float* v;
  float* ctx;
};

// The segment holding `row` (segments ascending by row0, none empty).
__device__ int find_segment(const device_seg* segs, int n_segs, int64_t row) {
  int lo = 0, hi = n_segs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (segs[mid].row0 <= row) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// RoPE in place on q (scaled by 1/sqrt(head_dim)) and k: one thread per (row, head, pair).
__global__ void rope_kernel(float* qkv, int64_t rows, const device_seg* segs, int n_segs, int heads, int head_dim,
                            float base, float inv_scale) {
  const int half = head_dim / 2, d = heads * head_dim;
  const int64_t total = rows * heads * half;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / (heads * half);
    const int h = static_cast<int>((i / half) % heads), p = static_cast<int>(i % half);
    const device_seg& s = segs[find_segment(segs, n_segs, r)];
    if (r < s.row0 || r >= int64_t(s.row0) + s.n) continue;  // a row of no segment: untouched
    const float expo = static_cast<float>(2 * p) / static_cast<float>(head_dim);
    const float inv_freq = 1.0f / static_cast<float>(pow(static_cast<double>(base), static_cast<double>(expo)));
    const float ang = static_cast<float>(s.p0 + (r - s.row0)) * inv_freq;
    const float c = static_cast<float>(cos(static_cast<double>(ang)));
    const float sn = static_cast<float>(sin(static_cast<double>(ang)));
    float* q = qkv + r * 3 * d + h * head_dim + 2 * p;
    float* k = q + d;
    const float cq = c * inv_scale, sq = sn * inv_scale;
    const float q0 = q[0], q1 = q[1], k0 = k[0], k1 = k[1];
    q[0] = q0 * cq + q1 * -sq;
    q[1] = q1 * cq + q0 * sq;
    k[0] = k0 * c + k1 * -sn;
    k[1] = k1 * c + k0 * sn;
  }
}

// One block per (query row, head): scores of a tile of keys in shared memory, online softmax
// across tiles, thread c < head_dim accumulating output dimension c.
__global__ void attention_kernel(const float* qkv, const device_seg* segs, int n_segs, window_spec w, int heads,
                                 int head_dim, float* out) {
  __shared__ float red[32];
  __shared__ float scores[key_tile];
  __shared__ float q[max_head_dim];
  const int64_t r = blockIdx.x;
  const int h = blockIdx.y, d = heads * head_dim;
  const device_seg& s = segs[find_segment(segs, n_segs, r)];
  if (r < s.row0 || r >= int64_t(s.row0) + s.n) return;  // the whole block: no barrier skipped unevenly
  // Keys: the cache's kv_len frames (positions p0 - kv_len ..), then the segment's rows.
  const int64_t first = int64_t(s.p0) - s.kv_len, end = s.p0 + int64_t(s.n), pos = s.p0 + (r - s.row0);
  int64_t lo = first, hi = end;
  if (w.chunk_frames > 0) {
    const int64_t c = pos / w.chunk_frames;
    hi = min(end, (c + 1) * w.chunk_frames);
    if (w.left_chunks >= 0) lo = max(first, (c - w.left_chunks) * w.chunk_frames);
  }
  // Key (value) at position t: cache row t - first before p0, else row row0 + (t - p0) of qkv.
  const float* seg_rows = qkv + int64_t(s.row0) * 3 * d;
  auto key = [&](int64_t t) { return t < s.p0 ? s.k + (t - first) * d : seg_rows + (t - s.p0) * 3 * d + d; };
  auto value = [&](int64_t t) { return t < s.p0 ? s.v + (t - first) * d : seg_rows + (t - s.p0) * 3 * d + 2 * d; };
  for (int c = threadIdx.x; c < head_dim; c += blockDim.x) q[c] = qkv[r * 3 * d + h * head_dim + c];
  __syncthreads();
  float run_max = -INFINITY, run_sum = 0.0f, acc = 0.0f;
  for (int64_t t0 = lo; t0 < hi; t0 += key_tile) {
    const int nk = static_cast<int>(min(int64_t(key_tile), hi - t0));
    float local_max = -INFINITY;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
      const float* k = key(t0 + j) + h * head_dim;
      float dot = 0.0f;
      for (int c = 0; c < head_dim; ++c) dot += q[c] * k[c];
      scores[j] = dot;
      local_max = fmaxf(local_max, dot);
    }
    const float tile_max = block_max(local_max, red);
    const float new_max = fmaxf(run_max, tile_max);
    const float rescale = expf(run_max - new_max);
    float local_sum = 0.0f;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
      scores[j] = expf(scores[j] - new_max);
      local_sum += scores[j];
    }
    run_sum = run_sum * rescale + block_sum(local_sum, red);  // its barriers publish scores[]
    if (threadIdx.x < head_dim) {
      float a = acc * rescale;
      for (int j = 0; j < nk; ++j) a += scores[j] * value(t0 + j)[h * head_dim + threadIdx.x];
      acc = a;
    }
    run_max = new_max;
    __syncthreads();  // the next tile overwrites scores
  }
  if (threadIdx.x < head_dim) out[r * d + h * head_dim + threadIdx.x] = acc / run_sum;
}

// Over the stream's rows [cache (ctx_len); segment], index c: cache row c, or y row row0 + c - ctx_len.
__global__ void context_kernel(const float* y, const device_seg* segs, int n_segs, int64_t rows, int64_t d, int ctx,
                               float* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * d; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, j = i % d;
    const device_seg& s = segs[find_segment(segs, n_segs, r)];
    if (r < s.row0 || r >= int64_t(s.row0) + s.n) continue;
    const int64_t last = s.ctx_len + (r - s.row0), first = max(int64_t(0), last - ctx + 1);
    float sum = 0.0f;
    for (int64_t c = first; c <= last; ++c) sum += c < s.ctx_len ? s.ctx[c * d + j] : y[(s.row0 + c - s.ctx_len) * d + j];
    out[i] = sum * (1.0f / static_cast<float>(last - first + 1));
  }
}

// The segment whose scratch rows hold `at` (kv_at or ctx_at ascending).
__device__ int find_scratch(const device_seg* segs, int n_segs, int64_t at, bool kv) {
  int lo = 0, hi = n_segs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if ((kv ? segs[mid].kv_at : segs[mid].ctx_at) <= at) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Cache updates, in two passes through scratch (a cache's new rows may come from its own old
// rows): gather the last kv_out frames of [cache; segment] (keys and values: 2 d per row) and the
// last ctx_out rows of [ctx cache; y], then copy them to the front of the caches.
__global__ void cache_gather_kernel(const float* qkv, const float* y, const device_seg* segs, int n_segs, int64_t d,
                                    bool kv, int64_t total_rows, float* scratch) {
  const int64_t width = kv ? 2 * d : d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total_rows * width;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = i / width, j = i % width;
    const device_seg& s = segs[find_scratch(segs, n_segs, at, kv)];
    const int64_t len = kv ? s.kv_len : s.ctx_len, keep = kv ? s.kv_out : s.ctx_out;
    const int64_t q = at - (kv ? s.kv_at : s.ctx_at);
    if (q < 0 || q >= keep) continue;
    const int64_t c = len + s.n - keep + q;  // index in [cache; segment]
    float v;
    if (kv) {
      const bool is_k = j < d;
      const int64_t col = is_k ? j : j - d;
      v = c < len ? (is_k ? s.k : s.v)[c * d + col] : qkv[(s.row0 + c - len) * 3 * d + (is_k ? d : 2 * d) + col];
    } else {
      v = c < len ? s.ctx[c * d + j] : y[(s.row0 + c - len) * d + j];
    }
    scratch[i] = v;
  }
}
__global__ void cache_scatter_kernel(const device_seg* segs, int n_segs, int64_t d, bool kv, int64_t total_rows,
                                     const float* scratch) {
  const int64_t width = kv ? 2 * d : d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total_rows * width;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = i / width, j = i % width;
    const device_seg& s = segs[find_scratch(segs, n_segs, at, kv)];
    const int64_t q = at - (kv ? s.kv_at : s.ctx_at);
    if (q < 0 || q >= (kv ? s.kv_out : s.ctx_out)) continue;
    if (kv)
      (j < d ? s.k : s.v)[q * d + (j < d ? j : j - d)] = scratch[i];
    else
      s.ctx[q * d + j] = scratch[i];
  }
}

// Indices of the k largest of v[0 .. n) (the lower index among equals), best first.
__device__ void top_k(const float* v, int n, int k, int32_t* out) {
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    const float s = v[i];
    if (kept == k && !(s > v[out[k - 1]])) continue;
    int pos = kept < k ? kept++ : k - 1;
    while (pos > 0 && s > v[out[pos - 1]]) {
      out[pos] = out[pos - 1];
      --pos;
    }
    out[pos] = i;
  }
}

__device__ void route_one(const float* s1, const float* s2, const float* group_bias, const float* expert_bias,
                          int64_t t, route_spec r, int32_t* groups, int32_t* experts, float* weights);

__global__ void route_kernel(const float* s1, const float* s2, const float* group_bias, const float* expert_bias,
                             int64_t n, route_spec r, int32_t* groups, int32_t* experts, float* weights) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < n; t += int64_t(gridDim.x) * blockDim.x)
    route_one(s1, s2, group_bias, expert_bias, t, r, groups, experts, weights);
}

__device__ void route_one(const float* s1, const float* s2, const float* group_bias, const float* expert_bias,
                          int64_t t, route_spec r, int32_t* groups, int32_t* experts, float* weights) {
  float sel_g[max_groups], sel_e[max_experts];
  const float* p1 = s1 + t * r.n_groups;
  const float* p2 = s2 + t * r.n_experts;
  const int per_group = r.n_experts / r.n_groups;
  for (int i = 0; i < r.n_groups; ++i) sel_g[i] = p1[i] + group_bias[i];
  int32_t* g = groups + t * r.top_groups;
  top_k(sel_g, r.n_groups, r.top_groups, g);
  for (int i = 0; i < r.n_experts; ++i) sel_e[i] = -INFINITY;
  for (int j = 0; j < r.top_groups; ++j)
    for (int i = g[j] * per_group; i < (g[j] + 1) * per_group; ++i) sel_e[i] = p2[i] + expert_bias[i];
  int32_t* e = experts + t * r.top_k;
  top_k(sel_e, r.n_experts, r.top_k, e);
  float sum = 0.0f;
  for (int j = 0; j < r.top_k; ++j) sum += p2[e[j]] * p1[e[j] / per_group];
  sum = fmaxf(sum, 1e-9f);
  float* wt = weights + t * r.top_k;
  for (int j = 0; j < r.top_k; ++j) wt[j] = p2[e[j]] * p1[e[j] / per_group] / sum;
}

// Expert ids outside [0, n_experts) are not counted: they raise *bad (read back by download()).
__global__ void count_kernel(const int32_t* experts, int64_t pairs, int n_experts, int32_t* counts, int32_t* bad) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs; p += int64_t(gridDim.x) * blockDim.x) {
    const int32_t e = experts[p];
    if (e < 0 || e >= n_experts) *bad = 1; else atomicAdd(&counts[e], 1);
  }
}
// offsets[0 .. n_experts] (exclusive scan of counts) and cursor = offsets; one thread.
__global__ void scan_kernel(const int32_t* counts, int n_experts, int32_t* offsets, int32_t* cursor) {
  int32_t s = 0;
  for (int e = 0; e < n_experts; ++e) {
    offsets[e] = s;
    cursor[e] = s;
    s += counts[e];
  }
  offsets[n_experts] = s;
}
__global__ void scatter_kernel(const int32_t* experts, int64_t pairs, int n_experts, int32_t* cursor,
                               int32_t* slot_pair, int32_t* pair_slot) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs; p += int64_t(gridDim.x) * blockDim.x) {
    if (experts[p] < 0 || experts[p] >= n_experts) {
      pair_slot[p] = -1;
      continue;
    }
    const int32_t slot = atomicAdd(&cursor[experts[p]], 1);
    slot_pair[slot] = static_cast<int32_t>(p);
    pair_slot[p] = slot;
  }
}

// One block per (expert, tile of its rows): gathered rows and hidden activations in shared
// memory; o[slot] = down(silu(x Wg) * (x Wu)) for the tile's slots.
__global__ void expert_ffn_kernel(const float* gate_up, const float* down, int64_t d, int64_t hidden, const float* x,
                                  int k, const int32_t* offsets, const int32_t* slot_pair, float* o) {
  extern __shared__ float smem[];
  float* xs = smem;                                // [tile, d]
  float* hs = smem + expert_tile_rows * d;         // [tile, 2 hidden]
  const int e = blockIdx.x;
  const int64_t begin = offsets[e], count = offsets[e + 1] - begin;
  const float* gu = gate_up + e * d * 2 * hidden;
  const float* dn = down + e * hidden * d;
  for (int64_t tile = blockIdx.y; tile * expert_tile_rows < count; tile += gridDim.y) {
    const int64_t s0 = begin + tile * expert_tile_rows;
    const int rows = static_cast<int>(min(int64_t(expert_tile_rows), count - tile * expert_tile_rows));
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * d; i += blockDim.x)
      xs[i] = x[int64_t(slot_pair[s0 + i / d] / k) * d + i % d];
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * 2 * hidden; i += blockDim.x) {
      const int64_t rr = i / (2 * hidden), j = i % (2 * hidden);
      float acc = 0.0f;
      for (int64_t c = 0; c < d; ++c) acc += xs[rr * d + c] * gu[c * 2 * hidden + j];
      hs[i] = acc;
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * hidden; i += blockDim.x) {
      const int64_t rr = i / hidden, j = i % hidden;
      const float g = hs[rr * 2 * hidden + j];
      hs[rr * 2 * hidden + j] = g / (1.0f + expf(-g)) * hs[rr * 2 * hidden + hidden + j];
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * d; i += blockDim.x) {
      const int64_t rr = i / d, col = i % d;
      float acc = 0.0f;
      for (int64_t j = 0; j < hidden; ++j) acc += hs[rr * 2 * hidden + j] * dn[j * d + col];
      o[(s0 + rr) * d + col] = acc;
    }
  }
}

// out[t, c] = sum over t's pairs, in ascending expert order, of weight * o[slot, c].
__global__ void combine_kernel(const int32_t* experts, const float* weights, const int32_t* pair_slot, int k,
                               const float* o, int64_t n, int64_t d, float* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * d; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / d, c = i % d;
    int order[max_top_k];
    for (int j = 0; j < k; ++j) order[j] = j;
    for (int j = 1; j < k; ++j)
      for (int m = j; m > 0 && experts[t * k + order[m]] < experts[t * k + order[m - 1]]; --m) {
        const int tmp = order[m];
        order[m] = order[m - 1];
        order[m - 1] = tmp;
      }
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) {
      const int64_t p = t * k + order[j];
      if (pair_slot[p] >= 0) acc += o[int64_t(pair_slot[p]) * d + c] * weights[p];
    }
    out[i] = acc;
  }
}

// Patches of a 3x3 stride-2 kernel: one thread per patch value; in_row[R] is output row R's
// first input row.
__global__ void patches_kernel(const float* in, const int32_t* in_row, int64_t rows_out, int64_t bins,
                               int64_t channels, float* patches) {
  const int64_t out_bins = (bins - 3) / 2 + 1, per_row = out_bins * 9 * channels;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows_out * per_row;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t R = i / per_row, rem = i % per_row;
    const int64_t f = rem / (9 * channels), tap = rem % (9 * channels);
    const int64_t kt = tap / (3 * channels), kf = (tap / channels) % 3, ch = tap % channels;
    patches[i] = in[((in_row[R] + kt) * bins + 2 * f + kf) * channels + ch];
  }
}

__device__ uint8_t to_e4m3(float x) {
  if (isnan(x)) return 0x7F;
  const uint8_t sign = signbit(x) ? 0x80 : 0;
  const float a = fabsf(x);
  if (a >= fp8_max) return sign | 0x7E;
  int e2 = 0;
  frexpf(a, &e2);
  const int ex = e2 - 1;
  if (a == 0.0f || ex < -6) return sign | static_cast<uint8_t>(static_cast<int>(rintf(ldexpf(a, 9))));
  int q = static_cast<int>(rintf(ldexpf(a, 3 - ex)));
  int e = ex;
  if (q == 16) {
    q = 8;
    ++e;
  }
  const int code = ((e + 7) << 3) | (q - 8);
  return sign | static_cast<uint8_t>(code > 0x7E ? 0x7E : code);
}
__device__ float from_e4m3(uint8_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  float v = e == 0 ? ldexpf(static_cast<float>(m), -9) : ldexpf(1.0f + static_cast<float>(m) / 8.0f, e - 7);
  if ((b & 0x7F) == 0x7F) v = nanf("");
  return (b & 0x80) ? -v : v;
}
// One block of fp8_group threads per group.
__global__ void fp8_encode_kernel(const float* x, int64_t n, uint8_t* q, float* scales) {
  __shared__ float red[32];
  const int64_t i = blockIdx.x * int64_t(fp8_group) + threadIdx.x;
  const float a = i < n ? fabsf(x[i]) : 0.0f;
  const float amax = block_max(a, red);
  const float scale = amax > 0.0f ? amax / fp8_max : 1.0f;
  if (threadIdx.x == 0) scales[blockIdx.x] = scale;
  if (i < n) q[i] = to_e4m3(x[i] * (1.0f / scale));
}
__global__ void fp8_decode_kernel(const uint8_t* q, const float* scales, int64_t n, float* x) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = from_e4m3(q[i]) * scales[i / fp8_group];
}

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
