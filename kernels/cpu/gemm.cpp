#include "kernels/cpu/gemm.hpp"

#include <cblas.h>

namespace sluice::kernels::cpu {

void gemm_reference(const gemm_args& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < g.k; ++p) {
        float av = g.trans_a ? g.a[p * g.m + i] : g.a[i * g.k + p];
        float bv = g.trans_b ? g.b[j * g.k + p] : g.b[p * g.n + j];
        acc += static_cast<double>(av) * bv;
      }
      float& out = g.c[i * g.n + j];
      out = static_cast<float>(g.alpha * acc + (g.beta == 0.0f ? 0.0 : g.beta * out));
    }
  }
}

void gemm(const gemm_args& g) {
  if (g.m == 0 || g.n == 0) return;
  const int lda = static_cast<int>(g.trans_a ? g.m : g.k);
  const int ldb = static_cast<int>(g.trans_b ? g.k : g.n);
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), g.alpha, g.a, lda, g.b,
              ldb, g.beta, g.c, static_cast<int>(g.n));
}

void blas_matmul(const matmul_args& g) {
  if (g.m <= 0 || g.n <= 0) return;
  float beta = 0.0f;
  if (g.accumulate) beta = 1.0f;
  if (g.bias) {
    for (int64_t i = 0; i < g.m; ++i) {
      float* c = g.c + i * g.ldc;
      for (int64_t j = 0; j < g.n; ++j) c[j] = (g.accumulate ? c[j] : 0.0f) + g.bias[j];
    }
    beta = 1.0f;
  }
  if (g.k <= 0) {
    if (beta == 0.0f)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) g.c[i * g.ldc + j] = 0.0f;
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.m), static_cast<int>(g.n),
              static_cast<int>(g.k), 1.0f, g.a, static_cast<int>(g.lda), g.b, static_cast<int>(g.ldb), beta, g.c,
              static_cast<int>(g.ldc));
}

void set_blas_threads(int n) { openblas_set_num_threads(n); }

int blas_threads() { return openblas_get_num_threads(); }

}  // namespace sluice::kernels::cpu
