#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "kernels/device.hpp"
#include "kernels/cuda_backend.hpp"
#include "tests/common/random_vec.hpp"

using namespace sluice;
using namespace sluice::kernels;

namespace {

using sluice::test::random_vec;

// Normalised mean squared error, as test-backend-ops compares backends.
double nmse(const std::vector<float>& ref, const std::vector<float>& got) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += (double(ref[i]) - got[i]) * (double(ref[i]) - got[i]);
    den += double(ref[i]) * ref[i];
  }
  return num / (den > 0 ? den : 1);
}

struct gemm_case {
  int64_t m, n, k;
  bool ta, tb;
  float beta;
};

}  // namespace

TEST_SUITE("kernels") {
  TEST_CASE("OpenBLAS gemm matches the scalar reference for every transpose and beta") {
    for (auto c : {gemm_case{7, 5, 3, false, false, 0.f}, gemm_case{64, 48, 80, false, true, 0.f},
                   gemm_case{33, 17, 129, true, false, 1.f}, gemm_case{16, 96, 40, true, true, 0.5f}}) {
      CAPTURE(c.m);
      CAPTURE(c.k);
      auto a = random_vec(c.m * c.k, 1), b = random_vec(c.k * c.n, 2), c0 = random_vec(c.m * c.n, 3);
      auto ref = c0, got = c0;
      cpu::gemm_args g{c.m, c.n, c.k, a.data(), b.data(), ref.data(), c.ta, c.tb, 1.0f, c.beta};
      cpu::gemm_reference(g);
      g.c = got.data();
      cpu::gemm(g);
      CHECK(nmse(ref, got) < 1e-10);
    }
  }

  TEST_CASE("gemm reference computes a hand-checked product") {
    std::vector<float> a{1, 2, 3, 4, 5, 6};        // [2, 3]
    std::vector<float> b{7, 8, 9, 10, 11, 12};     // [3, 2]
    std::vector<float> c(4, 0.f);
    cpu::gemm_reference({2, 2, 3, a.data(), b.data(), c.data()});
    CHECK(c == std::vector<float>{58, 64, 139, 154});
  }

  TEST_CASE("silu_mul") {
    std::vector<float> g{0.f, 1.f, -2.f, 10.f}, u{3.f, 2.f, 1.f, 0.5f}, out(4);
    cpu::silu_mul(g.data(), u.data(), out.data(), 4);
    for (int i = 0; i < 4; ++i) CHECK(out[i] == doctest::Approx(g[i] / (1 + std::exp(-g[i])) * u[i]));
  }

  TEST_CASE("the CPU is always a device and names its SIMD features") {
    auto devs = list_devices();
    REQUIRE(!devs.empty());
    CHECK(devs[0].kind == device_kind::cpu);
    CHECK(devs[0].cores >= 1);
  }

  TEST_CASE("CUDA twins match the CPU ops, or say clearly why no GPU can be used") {
    auto gpus = cuda_devices();
    if (!cuda_compiled()) {
      REQUIRE_FALSE(gpus.has_value());
      CHECK(gpus.error().code == errc::unavailable);
      CHECK(gpus.error().message.find("without CUDA") != std::string::npos);
      return;
    }
    REQUIRE(cuda_library_versions().has_value());
    CHECK(cuda_library_versions()->find("nccl") != std::string::npos);
    auto api = cuda_backend();
    REQUIRE_MESSAGE(api.has_value(), api.error().message);
    auto g = random_vec(10000, 4), u = random_vec(10000, 5);
    std::vector<float> ref(g.size()), got(g.size());
    cpu::silu_mul(g.data(), u.data(), ref.data(), int64_t(g.size()));
    auto r = (*api)->silu_mul(g.data(), u.data(), got.data(), int64_t(g.size()));
    if (!gpus) {
      // Built with CUDA on a machine without a GPU/driver: every entry point reports it.
      CHECK(gpus.error().code == errc::unavailable);
      REQUIRE_FALSE(r.has_value());
      MESSAGE("no GPU here: " << gpus.error().message);
      return;
    }
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(nmse(ref, got) < 1e-12);
    auto a = random_vec(64 * 80, 6), b = random_vec(48 * 80, 7);
    std::vector<float> cref(64 * 48), cgot(64 * 48);
    cpu::gemm_args ga{64, 48, 80, a.data(), b.data(), cref.data(), false, true};
    cpu::gemm_reference(ga);
    ga.c = cgot.data();
    auto rg = (*api)->gemm(ga);
    REQUIRE_MESSAGE(rg.has_value(), rg.error().message);
    CHECK(nmse(cref, cgot) < 1e-10);
  }
}
