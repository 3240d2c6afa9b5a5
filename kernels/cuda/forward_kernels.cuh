#pragma once
// The device kernels of kernels/cuda/backend_cuda.cu (its only includer): one thread per value,
// a block per row, or a block per (query, head); each computes in the CPU code's order where
// that is cheap, so tests/gpu can hold it to the CPU backend case by case.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/backend.hpp"

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

}  // namespace
}  // namespace sluice::kernels::cuda
