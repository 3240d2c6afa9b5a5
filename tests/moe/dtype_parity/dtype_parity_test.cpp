// The loader against PyTorch's own F16 / BF16 conversion. tools/train/test_half_weights.py
// (ctest recipe/half_weights) writes the inputs into a temp dir with torch and runs this binary
// with SLUICE_DTYPE_DIR set to it:
//   values/{f32,f16,bf16}.safetensors  the same tensors, stored by the recipe's writer in each dtype
//   values/reference.safetensors       F32: "<dtype>.<name>" = torch's t.half().float() etc.
//   {tiny,default}_{f32,f16,bf16}/     the tiny and the default model re-exported by export.py
//                                      --dtype, golden vectors recomputed with the rounded weights
// Without SLUICE_DTYPE_DIR every case fails: run it through the Python test.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "moe/acoustic_model.hpp"
#include "moe/forward.hpp"
#include "moe/frontend.hpp"
#include "moe/half_float.hpp"
#include "moe/routing.hpp"
#include "moe/safetensors.hpp"
#include "tests/moe/model_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

std::string dtype_dir() {
  const char* env = std::getenv("SLUICE_DTYPE_DIR");
  REQUIRE_MESSAGE(env != nullptr, "SLUICE_DTYPE_DIR is not set: run tools/train/test_half_weights.py");
  return env;
}

const std::string dtypes[] = {"f32", "f16", "bf16"};

// "f16" -> "F16": the header's spelling of export.py's --dtype.
std::string header_code(std::string dtype) {
  for (char& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return dtype;
}

// The same tolerance as tests/moe/model_test.cpp: C++ and PyTorch computing with the same weights.
constexpr double golden_tolerance = 1e-3;

int count_mismatched_rows(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int width) {
  int bad = 0;
  for (std::size_t t = 0; t * width < a.size(); ++t)
    bad += !std::equal(a.begin() + t * width, a.begin() + (t + 1) * width, b.begin() + t * width);
  return bad;
}

// A reroute hook (forward_options::reroute) that makes each layer take the experts and groups
// of `want` (a traced forward's layers, rows sorted ascending), with the gate weights the model's
// own scores give them (replacement_weight: the chosen experts' normalised weights).
std::function<void(int, routing&)> force_routing(const std::vector<layer_trace>& want) {
  return [&want](int layer, routing& r) {
    const auto& w = want[static_cast<std::size_t>(layer)];
    REQUIRE(static_cast<int64_t>(w.experts.size()) == r.n * r.top_k);
    std::copy(w.experts.begin(), w.experts.end(), r.experts.begin());
    std::copy(w.groups.begin(), w.groups.end(), r.groups.begin());
    for (int64_t t = 0; t < r.n; ++t)
      for (int j = 0; j < r.top_k; ++j)
        r.weights[t * r.top_k + j] = replacement_weight(r, t, r.experts[t * r.top_k + j]);
  };
}

std::vector<std::filesystem::path> golden_files(const std::string& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/golden")) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Logits, block outputs and routing of `dir`'s model against its golden vectors (PyTorch with
// the same stored weights); returns the worst logits error.
double check_golden(const std::string& dir) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = load_model(dir);
  const std::chrono::duration<double, std::milli> load_ms = std::chrono::steady_clock::now() - t0;
  REQUIRE_MESSAGE(model.has_value(), model.error().message);
  MESSAGE(dir << ": load_model " << load_ms.count() << " ms (reported, not checked)");
  const auto& arch = (*model)->arch();
  double worst = 0;
  const auto paths = golden_files(dir);
  REQUIRE_FALSE(paths.empty());
  for (const auto& p : paths) {
    CAPTURE(p.string());
    auto g = safetensors_file::load(p.string());
    REQUIRE_MESSAGE(g.has_value(), g.error().message);
    const auto fbank = *g->read_f32("fbank");
    forward_options opt;
    opt.trace = true;
    auto out = forward_offline(**model, fbank.data(), g->find("fbank")->shape[0], opt);
    REQUIRE_MESSAGE(out.has_value(), out.error().message);
    const double err = test::max_abs_diff(*g->read_f32("logits"), out->logits);
    CHECK(err <= golden_tolerance);
    worst = std::max(worst, err);
    for (int l = 0; l < arch.n_layers; ++l) {
      CAPTURE(l);
      const std::string n = "layer" + std::to_string(l);
      CHECK(test::max_abs_diff(*g->read_f32(n + ".out"), out->layers[l].out) <= golden_tolerance);
      CHECK(count_mismatched_rows(*g->read_i32(n + ".experts"), out->layers[l].experts, arch.top_k) == 0);
      CHECK(count_mismatched_rows(*g->read_i32(n + ".groups"), out->layers[l].groups, arch.top_groups) == 0);
    }
  }
  return worst;
}

}  // namespace

TEST_SUITE("dtype_parity") {
  TEST_CASE("tensors torch stored as F32, F16 and BF16 widen to torch's own f32 values bit for bit") {
    const std::string dir = dtype_dir() + "/values";
    auto ref = safetensors_file::load(dir + "/reference.safetensors");
    REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
    for (const std::string& dtype : dtypes) {
      CAPTURE(dtype);
      auto f = safetensors_file::load(dir + "/" + dtype + ".safetensors");
      REQUIRE_MESSAGE(f.has_value(), f.error().message);
      REQUIRE_FALSE(f->tensors().empty());
      for (const auto& t : f->tensors()) {
        CAPTURE(t.name);
        CHECK(std::string(to_string(t.dtype)) == header_code(dtype));
        auto got = widen_to_f32(t, f->source());
        REQUIRE_MESSAGE(got.has_value(), got.error().message);
        auto want = ref->read_f32(dtype + "." + t.name);
        REQUIRE_MESSAGE(want.has_value(), want.error().message);
        REQUIRE(got->size() == want->size());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < got->size(); ++i)
          differ += std::bit_cast<uint32_t>((*got)[i]) != std::bit_cast<uint32_t>((*want)[i]);
        CHECK(differ == 0);
      }
    }
  }

  TEST_CASE("the tiny and the default model stored in each dtype match their own PyTorch golden vectors") {
    for (const char* model : {"tiny", "default"})
      for (const std::string& dtype : dtypes) {
        const std::string dir = dtype_dir() + "/" + model + "_" + dtype;
        CAPTURE(dir);
        MESSAGE(dir << ": max abs logits error vs PyTorch " << check_golden(dir));
      }
  }

  TEST_CASE("the default model stored as F16 and BF16 gives the F32 model's logits within the dtype's bound") {
    // Bound, derived from the dtype (not from a measurement). Rounding a weight to nearest
    // changes it by a relative |d| <= u: u = 2^-11 for F16 (10 stored mantissa bits; every
    // weight of this model lies in F16's normal range, checked below), u = 2^-8 for BF16 (7).
    // A layer y = x W then changes by |dy_j| <= u * sum_i |x_i W_ij|: a relative error of u
    // where its products do not cancel. To first order the errors of the stages the signal
    // passes through add up, and LayerNorm after each residual branch keeps the gain from one
    // stage to the logits near 1. The stages on the longest path of this architecture:
    //   CMVN mean, CMVN istd, conv1, conv2, subsample.out                      5
    //   per block: ln1, qkv, proj, ln2, SwiGLU gate and up (their product: 2), down  7 x n_layers
    //   ln_out, ctc                                                          2
    // so |d logits| <= n_stages * u * max |logits|, with max |logits| of the F32 model on the
    // same input as the scale. Not covered: a routing choice that flips between two experts
    // whose scores tie to within the perturbation (a discrete jump): the half-precision model is
    // run a second time with the F32 model's expert and group choices forced on it (its own gate
    // weights for them), and the bound is checked on those logits; the free run's flips are
    // reported.
    const std::string base = dtype_dir();
    auto ref_model = load_model(base + "/default_f32");
    REQUIRE_MESSAGE(ref_model.has_value(), ref_model.error().message);
    const auto& arch = (*ref_model)->arch();
    const double n_stages = 5 + 7 * arch.n_layers + 2;
    const auto paths = golden_files(base + "/default_f32");
    REQUIRE_FALSE(paths.empty());
    for (auto [dtype, u] : {std::pair<std::string, double>{"f16", std::ldexp(1.0, -11)}, {"bf16", std::ldexp(1.0, -8)}}) {
      CAPTURE(dtype);
      auto model = load_model(base + "/default_" + dtype);
      REQUIRE_MESSAGE(model.has_value(), model.error().message);
      for (const auto& p : paths) {
        CAPTURE(p.string());
        auto g = safetensors_file::load(p.string());
        REQUIRE_MESSAGE(g.has_value(), g.error().message);
        const auto fbank = *g->read_f32("fbank");
        const int64_t frames = g->find("fbank")->shape[0];
        forward_options opt;
        opt.trace = true;
        auto ref = forward_offline(**ref_model, fbank.data(), frames, opt);
        auto own = forward_offline(**model, fbank.data(), frames, opt);
        REQUIRE(ref.has_value());
        REQUIRE(own.has_value());
        forward_options forced = opt;
        forced.reroute = force_routing(ref->layers);
        auto out = forward_offline(**model, fbank.data(), frames, forced);
        REQUIRE(out.has_value());
        double scale = 0;
        for (float v : ref->logits) scale = std::max(scale, double(std::abs(v)));
        const double bound = n_stages * u * scale;
        const double err = test::max_abs_diff(ref->logits, out->logits);
        int flipped = 0, forced_flipped = 0;
        for (int l = 0; l < arch.n_layers; ++l) {
          flipped += count_mismatched_rows(ref->layers[l].experts, own->layers[l].experts, arch.top_k);
          forced_flipped += count_mismatched_rows(ref->layers[l].experts, out->layers[l].experts, arch.top_k);
        }
        MESSAGE(dtype << " " << p.filename().string() << ": max |d logits| " << err << " with the F32 choices ("
                      << test::max_abs_diff(ref->logits, own->logits) << " with its own), bound " << bound << " ("
                      << n_stages << " stages x u x max|logits| " << scale << "); frames x layers where its own "
                      << "choice differs: " << flipped << " of " << ref->n_frames * arch.n_layers);
        CHECK(forced_flipped == 0);  // the forcing took
        CHECK(err <= bound);
        CHECK(err > 0);  // the stored weights really differ from the F32 ones
      }
    }
  }

  TEST_CASE("no weight of the default model overflows F16") {
    // A premise of the F16 bound above: no weight becomes infinite (|w| > 65504). Weights below
    // 2^-14 become F16 subnormals with an absolute error <= 2^-25 instead of a relative one,
    // which adds at most 2^-25 * sum |x_i| to a layer's output: their count is reported.
    auto f = safetensors_file::load(dtype_dir() + "/default_f32/weights.safetensors");
    REQUIRE_MESSAGE(f.has_value(), f.error().message);
    std::size_t overflow = 0, subnormal = 0, total = 0;
    for (const auto& t : f->tensors()) {
      const auto v = *widen_to_f32(t, f->source());
      total += v.size();
      for (float x : v) {
        overflow += std::abs(x) > 65504.0f;
        subnormal += x != 0 && std::abs(x) < std::ldexp(1.0f, -14);
      }
    }
    MESSAGE(subnormal << " of " << total << " weights are F16 subnormals");
    CHECK(overflow == 0);
  }
}
