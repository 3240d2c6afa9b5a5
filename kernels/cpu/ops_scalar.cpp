// The scalar reference of every op in ops.hpp: plain loops in the order that reads most
// clearly; the vector paths are tested against these.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/swiglu.hpp"

namespace sluice::kernels::cpu {
namespace {

void matmul_scalar(const matmul_args& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    float* c = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) {
      float init = g.accumulate ? c[j] : 0.0f;
      if (g.bias) init += g.bias[j];
      c[j] = init;
    }
    for (int64_t p = 0; p < g.k; ++p) {
      const float av = g.a[i * g.lda + p];
      const float* b = g.b + p * g.ldb;
      for (int64_t j = 0; j < g.n; ++j) c[j] += av * b[j];
    }
  }
}

void layer_norm_scalar(const float* x, const float* gamma, const float* beta, float* out, int64_t rows,
                       int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    float mean = 0.0f;
    for (int64_t i = 0; i < dim; ++i) mean += xr[i];
    mean /= static_cast<float>(dim);
    float var = 0.0f;
    for (int64_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<float>(dim);
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (int64_t i = 0; i < dim; ++i) o[i] = (xr[i] - mean) * rstd * gamma[i] + beta[i];
  }
}

void softmax_scalar(float* x, int64_t n) {
  const float mx = *std::max_element(x, x + n);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void sigmoid_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void exp_scalar(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}

void rope_scalar(float* x, const float* cos2, const float* sin2, int64_t head_dim, int64_t heads) {
  for (int64_t h = 0; h < heads; ++h, x += head_dim)
    for (int64_t i = 0; i + 1 < head_dim; i += 2) {
      const float a = x[i], b = x[i + 1];
      x[i] = a * cos2[i] + b * sin2[i];
      x[i + 1] = b * cos2[i + 1] + a * sin2[i + 1];
    }
}

}  // namespace

const cpu_ops& scalar_ops() {
  static const cpu_ops ops{simd_level::scalar, matmul_scalar,  silu_mul,   layer_norm_scalar,
                           softmax_scalar,     sigmoid_scalar, exp_scalar, rope_scalar};
  return ops;
}

}  // namespace sluice::kernels::cpu
