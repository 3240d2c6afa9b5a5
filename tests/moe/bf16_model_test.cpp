// `[model] math = "bf16"` (moe/bf16_weights, compute_ctx): which weight views are packed, that
// products by them and only them take the bf16 kernel, and what that does to the default
// model's output against PyTorch's f32 golden logits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/sluice_config.hpp"
#include "kernels/cpu/bf16_gemm.hpp"
#include "moe/bf16_weights.hpp"
#include "moe/forward.hpp"
#include "moe/recognizer/recognizer_resources.hpp"
#include "tests/moe/batch_test_util.hpp"
#include "tests/moe/golden_cases.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

const char* default_dir() { return SLUICE_SOURCE_DIR "/models/default"; }

}  // namespace

TEST_SUITE("bf16") {
  TEST_CASE("the default model's packed views: every weight product except the routers, found by exact view") {
    const auto model = test::load(default_dir());
    const auto& a = model->arch();
    const auto& w = model->weights();
    const auto packed = bf16_weights::build(model);
    // Front end: conv1, conv2, output layer. Each block: qkv, proj, each shared expert's gate,
    // up and down, each routed expert's gate, up and down. Then the CTC head.
    const int64_t per_block = 2 + 3 * a.n_shared + 3 * a.n_routed;
    CHECK(static_cast<int64_t>(packed->views()) == 3 + a.n_layers * per_block + 1);
    // ceil(k / 2) words of 4 bytes per column of each view, from the architecture's shapes:
    // conv1 takes 3x3 taps of one input (k = 9: padded to 5 pairs), conv2 3x3 taps of C channels.
    auto bytes = [](int64_t k, int64_t n) { return static_cast<std::size_t>((k + 1) / 2 * n * 4); };
    const int64_t d = a.d_model, c = a.conv_channels;
    std::size_t want = bytes(9, c) + bytes(9 * c, c) + bytes(w.frontend.out.in, d) + bytes(d, a.vocab_size);
    want += static_cast<std::size_t>(a.n_layers) *
            (bytes(d, 3 * d) + bytes(d, d) + a.n_shared * (2 * bytes(d, a.shared_hidden) + bytes(a.shared_hidden, d)) +
             a.n_routed * (2 * bytes(d, a.expert_hidden) + bytes(a.expert_hidden, d)));
    CHECK(packed->bytes() == want);
    const auto& l0 = w.blocks[0];
    const auto* qkv = packed->find(l0.qkv.w.data(), l0.qkv.in, l0.qkv.out, l0.qkv.out);
    REQUIRE(qkv != nullptr);
    CHECK(qkv->k == l0.qkv.in);
    CHECK(qkv->n == l0.qkv.out);
    CHECK(qkv->pairs[0] == (kernels::cpu::to_bf16(l0.qkv.w[0]) | uint32_t(kernels::cpu::to_bf16(l0.qkv.w[l0.qkv.out])) << 16));
    const auto& e = l0.moe.experts;
    CHECK(packed->find(e.gate_up_of(5) + e.hidden, e.d, e.hidden, 2 * e.hidden) != nullptr);  // expert 5's up half
    CHECK(packed->find(e.down_of(31), e.hidden, e.d, e.d) != nullptr);
    // Not packed: the routers, a view that does not start a registered one, another stride or shape.
    CHECK(packed->find(l0.moe.router1.w.data(), a.d_model, l0.moe.router1.out, l0.moe.router1.out) == nullptr);
    CHECK(packed->find(l0.qkv.w.data() + 1, l0.qkv.in, l0.qkv.out, l0.qkv.out) == nullptr);
    CHECK(packed->find(l0.qkv.w.data(), l0.qkv.in, l0.qkv.out, l0.qkv.out + 1) == nullptr);
    CHECK(packed->find(l0.qkv.w.data(), l0.qkv.in - 1, l0.qkv.out, l0.qkv.out) == nullptr);
  }

  TEST_CASE("model.math: f32 packs nothing, bf16 packs the model where the CPU has AVX-512 BF16") {
    config::sluice_config cfg;
    cfg.model.dir = default_dir();
    const auto model = test::load(default_dir());
    auto f32 = recognizer_resources::create(cfg, model, false);
    REQUIRE(f32.has_value());
    CHECK((*f32)->compute.bf16 == nullptr);
    cfg.model.math = "bf16";
    auto bf16 = recognizer_resources::create(cfg, model, false);
    if (kernels::cpu::bf16_supported()) {
      REQUIRE(bf16.has_value());
      REQUIRE((*bf16)->compute.bf16 != nullptr);
      CHECK((*bf16)->compute.bf16->views() > 600);
    } else {
      REQUIRE(!bf16.has_value());
      CHECK(bf16.error().message.find("AVX-512 BF16") != std::string::npos);
    }
  }

  // What bf16 does to the model's output is measured on the test sets (README: CER/WER and the
  // share of text changed, tools/train/evaluate.py --compare-set model.math=bf16) and bounded end
  // to end by the phone-speech WER target (tests/tools/cli_test.cpp). Here: the products go where
  // the table says. The kernel's numerics are tests/kernels/bf16_gemm_test.cpp's.
  TEST_CASE("bf16 forward of the default model: the packed views move the logits off f32, an empty table changes nothing") {
    if (!kernels::cpu::bf16_supported()) {
      MESSAGE("SKIPPED: no AVX-512 BF16 on this CPU (bf16 math is refused at start there)");
      return;
    }
    const auto model = test::load(default_dir());
    const auto& a = model->arch();
    forward_options f32, empty, bf16;
    empty.compute.bf16 = std::make_shared<const bf16_weights>();
    bf16.compute.bf16 = bf16_weights::build(model);
    for (auto& g : test::golden_cases(default_dir())) {
      CAPTURE(g.name);
      const auto torch = *g.file.read_f32("logits");
      auto plain = forward_offline(*model, g.fbank.data(), g.frames, f32);
      auto none = forward_offline(*model, g.fbank.data(), g.frames, empty);
      auto packed = forward_offline(*model, g.fbank.data(), g.frames, bf16);
      REQUIRE(plain.has_value());
      REQUIRE(none.has_value());
      REQUIRE(packed.has_value());
      // No view found: every product takes the f32 path, bit for bit.
      CHECK(none->logits == plain->logits);
      double f32_err = 0, bf16_err = 0;
      for (std::size_t i = 0; i < torch.size(); ++i) {
        f32_err = std::max(f32_err, std::abs(double(plain->logits[i]) - torch[i]));
        bf16_err = std::max(bf16_err, std::abs(double(packed->logits[i]) - torch[i]));
      }
      MESSAGE(g.name << ": max |logit - PyTorch f32|: f32 math " << f32_err << ", bf16 math " << bf16_err);
      CHECK(f32_err <= 1e-3);  // model_test's parity tolerance
      CHECK(bf16_err > 1e-3);  // bf16 is in use
    }
  }
}
