// Golden parity of the C++ forward with tools/train/model.py on the committed tiny model:
// logits, every block's output, and the routing decisions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "moe/acoustic_model.hpp"
#include "moe/forward.hpp"
#include "moe/frontend.hpp"
#include "moe/safetensors.hpp"
#include "tests/moe/golden_cases.hpp"
#include "tests/moe/model_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

using test::golden_case;
using test::golden_cases;

int count_mismatched_rows(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int width) {
  int bad = 0;
  for (std::size_t t = 0; t * width < a.size(); ++t)
    bad += !std::equal(a.begin() + t * width, a.begin() + (t + 1) * width, b.begin() + t * width);
  return bad;
}

struct parity {
  double logits = 0, blocks = 0, logits_full = 0;  // worst max abs errors
  void merge(const parity& o) {
    logits = std::max(logits, o.logits);
    blocks = std::max(blocks, o.blocks);
    logits_full = std::max(logits_full, o.logits_full);
  }
};

// Golden parity of one model directory under one set of compute options.
parity check_golden(const std::string& dir, const compute_options& compute, double logits_tol) {
  parity worst;
  auto model = load_model(dir);
  REQUIRE_MESSAGE(model.has_value(), model.error().message);
  const auto& arch = (*model)->arch();
  for (auto& g : golden_cases(dir)) {
    CAPTURE(g.name);
    forward_options opt;
    opt.compute = compute;
    opt.trace = true;
    auto out = forward_offline(**model, g.fbank.data(), g.frames, opt);
    REQUIRE_MESSAGE(out.has_value(), out.error().message);
    auto logits = *g.file.read_f32("logits");
    REQUIRE(out->n_frames == g.file.find("logits")->shape[0]);
    REQUIRE(out->n_frames == subsampled_length(g.frames));
    const double err = test::max_abs_diff(logits, out->logits);
    CHECK(err <= logits_tol);
    double worst_layer = 0;
    for (int l = 0; l < arch.n_layers; ++l) {
      CAPTURE(l);
      const std::string p = "layer" + std::to_string(l);
      const auto ref_out = *g.file.read_f32(p + ".out");
      const double layer_err = test::max_abs_diff(ref_out, out->layers[l].out);
      worst_layer = std::max(worst_layer, layer_err);
      CHECK(layer_err <= logits_tol);
      CHECK(count_mismatched_rows(*g.file.read_i32(p + ".experts"), out->layers[l].experts, arch.top_k) == 0);
      CHECK(count_mismatched_rows(*g.file.read_i32(p + ".groups"), out->layers[l].groups, arch.top_groups) == 0);
    }
    worst.merge({err, worst_layer, 0});
    opt.window = attention_window{0, -1};
    opt.trace = false;
    auto full = forward_offline(**model, g.fbank.data(), g.frames, opt);
    REQUIRE(full.has_value());
    const double full_err = test::max_abs_diff(*g.file.read_f32("logits_full"), full->logits);
    worst.merge({0, 0, full_err});
    CHECK(full_err <= logits_tol);
  }
  return worst;
}

void report(const std::string& what, const parity& p) {
  MESSAGE(what << ": max abs err vs PyTorch: logits " << p.logits << ", block outputs " << p.blocks
               << ", logits_full (chunk 0) " << p.logits_full << "; expert and group choices identical");
}

constexpr double golden_tolerance = 1e-3;

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("tiny model: logits, block outputs and routing match PyTorch at every SIMD level and backend") {
    const std::string dir = SLUICE_TEST_DATA_DIR "/tiny_model";
    parity worst;
    for (auto level : test::supported_levels())
      for (auto dense : {gemm_backend::blas, gemm_backend::own})
        for (auto experts : {gemm_backend::blas, gemm_backend::own})
          worst.merge(check_golden(dir, compute_options{level, dense, experts, nullptr}, golden_tolerance));
    report("tiny model, every SIMD level and backend", worst);
  }

  TEST_CASE("tiny word-piece model exported by the recipe: loads with its tokenizer and matches PyTorch") {
    // tools/train/export.py --random-tiny --pieces tests/data/pieces --golden-synthetic 2
    const std::string dir = SLUICE_TEST_DATA_DIR "/tiny_pieces_model";
    auto model = load_model(dir);
    REQUIRE_MESSAGE(model.has_value(), model.error().message);
    CHECK((*model)->tokens().pieces());
    CHECK((*model)->tokens().size() == 301);
    CHECK((*model)->tokens().space_id() == -1);
    report("tiny word-piece model", check_golden(dir, compute_options{}, golden_tolerance));
  }

  TEST_CASE("the default model (or SLUICE_MOE_GOLDEN_DIR) matches its PyTorch golden vectors") {
    // The shipped default model, or another model directory with golden vectors.
    const char* env = std::getenv("SLUICE_MOE_GOLDEN_DIR");
    const std::string dir = env ? env : SLUICE_SOURCE_DIR "/models/default";
    report(dir, check_golden(dir, compute_options{}, golden_tolerance));
  }

  TEST_CASE("short, empty and bad inputs") {
    auto model = load_model(SLUICE_TEST_DATA_DIR "/tiny_model");
    REQUIRE(model.has_value());
    const int64_t mels = (*model)->arch().n_mels;
    std::vector<float> fb(10 * mels, 8.0f);
    for (int64_t frames : {0, 1, 6}) {
      auto out = forward_offline(**model, fb.data(), frames);
      REQUIRE(out.has_value());
      CHECK(out->n_frames == 0);
      CHECK(out->logits.empty());
    }
    auto seven = forward_offline(**model, fb.data(), 7);
    REQUIRE(seven.has_value());
    CHECK(seven->n_frames == 1);
    fb[3 * mels + 5] = std::nanf("");
    auto nan = forward_offline(**model, fb.data(), 10);
    REQUIRE_FALSE(nan.has_value());
    CHECK(nan.error().message.find("frame 3 bin 5 is not finite") != std::string::npos);
    forward_options bad;
    bad.window = attention_window{-1, 0};
    CHECK(forward_offline(**model, fb.data(), 0, bad).error().code == errc::invalid_argument);
  }
}
