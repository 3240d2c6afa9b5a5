// load_model on the committed tiny model and on broken copies of it, made in a temp dir at
// test time: every problem must be refused with a message that names it.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "moe/acoustic_model.hpp"
#include "moe/weight_manifest.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

const std::string tiny = SLUICE_TEST_DATA_DIR "/tiny_model";

void write_text(const std::string& path, const std::string& s) { test::write_bytes(path, {s.begin(), s.end()}); }

// A copy of the tiny model in a fresh temp dir, with the weights file split into its header
// text and data so tests can rewrite either.
struct model_copy {
  test::temp_dir dir;
  std::string header;
  std::vector<uint8_t> data;

  model_copy() {
    for (const char* f : {"model.json", "tokens.txt", "weights.safetensors"})
      std::filesystem::copy_file(tiny + "/" + f, dir.file(f));
    auto bytes = test::read_bytes(tiny + "/weights.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    header.assign(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
    data.assign(bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n), bytes.end());
  }
  std::string path() const { return dir.file(""); }

  void write_weights(int64_t claimed_header_len = -1) {
    std::vector<uint8_t> out(8);
    const uint64_t n = claimed_header_len >= 0 ? uint64_t(claimed_header_len) : header.size();
    std::memcpy(out.data(), &n, 8);
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    test::write_bytes(dir.file("weights.safetensors"), out);
  }

  // Replaces the first `from` in the header (which must be there).
  void edit_header(const std::string& from, const std::string& to) {
    const auto at = header.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    header.replace(at, from.size(), to);
    write_weights();
  }

  void edit_json(const std::string& from, const std::string& to) {
    auto text = sluice::test::read_text(dir.file("model.json"));
    const auto at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    text.replace(at, from.size(), to);
    write_text(dir.file("model.json"), text);
  }

  // Points tensor `name`'s header entry at `bytes`, appended to the data, as `dtype` with
  // `shape` (JSON); its old bytes stay behind as an unused gap, which the format allows.
  void restore_as(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::vector<uint8_t>& bytes) {
    const auto at = header.find("\"" + name + "\":{");
    REQUIRE_MESSAGE(at != std::string::npos, name);
    const auto end = header.find('}', at) + 1;
    const auto begin = data.size();
    data.insert(data.end(), bytes.begin(), bytes.end());
    header.replace(at, end - at,
                   "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
                       std::to_string(begin) + "," + std::to_string(data.size()) + "]}");
    write_weights();
  }

  error load_error() const {
    auto m = load_model(path());
    REQUIRE_FALSE_MESSAGE(m.has_value(), "the broken model loaded");
    return m.error();
  }
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// `n` 16-bit values cycling through `pattern`, little-endian.
std::vector<uint8_t> halves(const std::vector<uint16_t>& pattern, std::size_t n) {
  std::vector<uint8_t> out(2 * n);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(out.data() + 2 * i, &pattern[i % pattern.size()], 2);
  return out;
}

constexpr std::size_t tiny_vocab = 29;  // ctc.bias is [29]

#define CHECK_ERROR_NAMES(err, part) CHECK_MESSAGE(contains((err).message, part), (err).message)

}  // namespace

TEST_SUITE("loader") {
  TEST_CASE("the tiny model loads, and its tensors are exactly those the architecture derives") {
    auto m = load_model(tiny);
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    const auto& a = (*m)->arch();
    CHECK(a.d_model == 32);
    CHECK(a.n_routed == 8);
    CHECK((*m)->tokens().size() == a.vocab_size);
    CHECK((*m)->manifest().streaming.chunk_frames == 4);
    CHECK((*m)->manifest().features.num_mel_bins == 80);
    // 8 frontend + 2 x (14 dense and routing + 3 shared + 24 routed) + 4 final tensors.
    CHECK(expected_tensors(a).size() == 8 + 2 * (14 + 3 + 24) + 4);
    const auto& bank = (*m)->weights().blocks[0].moe.experts;
    CHECK(bank.gate_up.size() == std::size_t(8 * 32 * 2 * 16));
  }

  TEST_CASE("F16 and BF16 tensors load widened to exact f32 values, also in a half-precision model") {
    SUBCASE("F16") {
      model_copy c;
      // 1, -2, 65504, 2^-24 (smallest subnormal), -0, 1023 * 2^-24 (largest subnormal)
      c.restore_as("ctc.bias", "F16", "[29]", halves({0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x03ff}, tiny_vocab));
      auto m = load_model(c.path());
      REQUIRE_MESSAGE(m.has_value(), m.error().message);
      const std::vector<float> cycle{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24), -0.0f, std::ldexp(1023.0f, -24)};
      const auto& b = (*m)->weights().ctc.b;
      REQUIRE(b.size() == tiny_vocab);
      for (std::size_t i = 0; i < tiny_vocab; ++i) CHECK(b[i] == cycle[i % cycle.size()]);
      CHECK(std::signbit(b[4]));
    }
    SUBCASE("BF16") {
      model_copy c;
      c.restore_as("ctc.bias", "BF16", "[29]", halves({0x3f80, 0xc000, 0x3eab, 0x0080}, tiny_vocab));
      auto m = load_model(c.path());
      REQUIRE_MESSAGE(m.has_value(), m.error().message);
      const std::vector<float> cycle{1.0f, -2.0f, 0.333984375f, std::ldexp(1.0f, -126)};
      const auto& b = (*m)->weights().ctc.b;
      REQUIRE(b.size() == tiny_vocab);
      for (std::size_t i = 0; i < tiny_vocab; ++i) CHECK(b[i] == cycle[i % cycle.size()]);
    }
    SUBCASE("a [d_model, d_model] BF16 weight is transposed like its F32 form") {
      // attn.proj.weight [32, 32] stored as BF16 with W[o][i] = o - i (exact in bf16); the
      // loader's layout is w[i * out + o].
      model_copy c;
      std::vector<uint16_t> w;
      for (int o = 0; o < 32; ++o)
        for (int i = 0; i < 32; ++i) w.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(float(o - i)) >> 16));
      c.restore_as("blocks.1.attn.proj.weight", "BF16", "[32,32]", halves(w, w.size()));
      auto m = load_model(c.path());
      REQUIRE_MESSAGE(m.has_value(), m.error().message);
      const auto& l = (*m)->weights().blocks[1].proj;
      REQUIRE(l.w.size() == 32u * 32u);
      int wrong = 0;
      for (int o = 0; o < 32; ++o)
        for (int i = 0; i < 32; ++i) wrong += l.w[std::size_t(i * 32 + o)] != float(o - i);
      CHECK(wrong == 0);
    }
  }

  TEST_CASE("broken weights files are refused with the problem named") {
    SUBCASE("truncated") {
      model_copy c;
      c.data.resize(c.data.size() / 2);
      c.write_weights();
      auto e = c.load_error();
      CHECK(e.code == errc::truncated);
      CHECK_ERROR_NAMES(e, "go past the end of the data");
      CHECK_ERROR_NAMES(e, "the file is truncated");
    }
    SUBCASE("corrupted header JSON") {
      model_copy c;
      c.edit_header("{\"dtype\"", "{\"dtype\"::");
      auto e = c.load_error();
      CHECK(e.code == errc::corrupt);
      CHECK_ERROR_NAMES(e, "the header is not valid JSON");
    }
    SUBCASE("header length beyond the file") {
      model_copy c;
      c.write_weights(int64_t(c.header.size() + c.data.size() + 1));
      auto e = c.load_error();
      CHECK(e.code == errc::truncated);
      CHECK_ERROR_NAMES(e, "goes past the end of the file");
    }
    SUBCASE("a tensor with the wrong shape (same bytes)") {
      model_copy c;
      c.edit_header(R"("blocks.0.moe.router1.weight":{"dtype":"F32","shape":[4,36])",
                    R"("blocks.0.moe.router1.weight":{"dtype":"F32","shape":[36,4])");
      auto e = c.load_error();
      CHECK(e.code == errc::invalid_config);
      CHECK_ERROR_NAMES(e, "blocks.0.moe.router1.weight has shape [36, 4], model.json's architecture needs [4, 36] = "
                           "[n_groups, d_model + n_acoustic]");
    }
    SUBCASE("a missing tensor") {
      model_copy c;
      const auto at = c.header.find("\"blocks.1.moe.experts.5.w_up.weight\"");
      REQUIRE(at != std::string::npos);
      const auto end = c.header.find('}', at) + 2;  // the entry, its closing brace and comma
      c.header.erase(at, end - at);
      c.write_weights();
      auto e = c.load_error();
      CHECK_ERROR_NAMES(e, "missing tensor blocks.1.moe.experts.5.w_up.weight (model.json's architecture needs [16, 32] "
                           "= [expert_hidden, d_model])");
    }
    SUBCASE("an extra tensor") {
      model_copy c;
      const auto n = c.data.size();
      c.data.resize(n + 128);
      c.edit_header("{", "{\"blocks.2.ln1.weight\":{\"dtype\":\"F32\",\"shape\":[32],\"data_offsets\":[" + std::to_string(n) +
                             "," + std::to_string(n + 128) + "]},");
      auto e = c.load_error();
      CHECK_ERROR_NAMES(e, "unexpected tensor blocks.2.ln1.weight [32]");
      CHECK_ERROR_NAMES(e, "n_layers 2");
    }
    SUBCASE("a wrong dtype") {
      model_copy c;
      c.edit_header(R"("ctc.bias":{"dtype":"F32")", R"("ctc.bias":{"dtype":"I32")");
      auto e = c.load_error();
      CHECK(e.code == errc::unsupported);
      CHECK_ERROR_NAMES(e, "ctc.bias is I32; the engine reads F32, F16 or BF16 weights");
    }
    SUBCASE("I8 and F64 tensors, with the byte length of their shape, are refused by dtype") {
      for (auto [dtype, size] : {std::pair<std::string, std::size_t>{"I8", 1}, {"F64", 8}}) {
        CAPTURE(dtype);
        model_copy c;
        c.restore_as("ctc.bias", dtype, "[29]", std::vector<uint8_t>(tiny_vocab * size));
        auto e = c.load_error();
        CHECK(e.code == errc::unsupported);
        CHECK_ERROR_NAMES(e, "ctc.bias is " + dtype + "; the engine reads F32, F16 or BF16 weights");
      }
    }
    SUBCASE("F16 and BF16 tensors whose byte length does not fit their shape are refused") {
      // [29] F16 is 58 bytes: the 116 bytes of its F32 form and 56 bytes are both wrong.
      for (auto [dtype, nbytes] : {std::pair<std::string, std::size_t>{"F16", 116}, {"F16", 56}, {"BF16", 116},
                                   {"BF16", 60}}) {
        CAPTURE(dtype);
        CAPTURE(nbytes);
        model_copy c;
        c.restore_as("ctc.bias", dtype, "[29]", std::vector<uint8_t>(nbytes));
        auto e = c.load_error();
        CHECK(e.code == errc::corrupt);
        CHECK_ERROR_NAMES(e, "tensor 'ctc.bias': shape [29] " + dtype + " needs 58 bytes but data_offsets");
      }
    }
    SUBCASE("an F16 tensor cut short by the end of the file") {
      model_copy c;
      c.restore_as("ctc.bias", "F16", "[29]", halves({0x3c00}, tiny_vocab));
      c.data.resize(c.data.size() - 2);
      c.write_weights();
      auto e = c.load_error();
      CHECK(e.code == errc::truncated);
      CHECK_ERROR_NAMES(e, "tensor 'ctc.bias': data_offsets");
      CHECK_ERROR_NAMES(e, "the file is truncated");
    }
    SUBCASE("an unknown dtype") {
      model_copy c;
      c.edit_header(R"("ctc.bias":{"dtype":"F32")", R"("ctc.bias":{"dtype":"F31")");
      CHECK_ERROR_NAMES(c.load_error(), "tensor 'ctc.bias': unknown dtype 'F31'");
    }
    SUBCASE("no weights file") {
      model_copy c;
      std::filesystem::remove(c.dir.file("weights.safetensors"));
      auto e = c.load_error();
      CHECK(e.code == errc::io);
      CHECK_ERROR_NAMES(e, "weights.safetensors");
    }
  }

  TEST_CASE("broken model.json and tokens.txt are refused with the problem named") {
    SUBCASE("wrong format") {
      model_copy c;
      c.edit_json("\"sluice-moe-ctc\"", "\"onnx\"");
      auto e = c.load_error();
      CHECK(e.code == errc::unsupported);
      CHECK_ERROR_NAMES(e, "format is \"onnx\", this engine reads \"sluice-moe-ctc\"");
    }
    SUBCASE("wrong version") {
      model_copy c;
      c.edit_json("\"version\": 1", "\"version\": 2");
      CHECK_ERROR_NAMES(c.load_error(), "version 2 of sluice-moe-ctc; this engine reads version 1");
    }
    SUBCASE("a version that is not an integer") {
      model_copy c;
      c.edit_json("\"version\": 1", "\"version\": 1.5");
      CHECK_ERROR_NAMES(c.load_error(), "model.json: version must be an integer, found 1.5");
    }
    SUBCASE("not JSON") {
      model_copy c;
      c.edit_json("{", "{{");
      CHECK_ERROR_NAMES(c.load_error(), "model.json: not valid JSON");
    }
    SUBCASE("d_model not divisible by n_heads") {
      model_copy c;
      c.edit_json("\"n_heads\": 2", "\"n_heads\": 3");
      auto e = c.load_error();
      CHECK(e.code == errc::invalid_config);
      CHECK_ERROR_NAMES(e, "architecture: d_model 32 is not divisible by n_heads 3");
    }
    SUBCASE("n_routed not divisible by n_groups") {
      model_copy c;
      c.edit_json("\"n_groups\": 4", "\"n_groups\": 3");
      CHECK_ERROR_NAMES(c.load_error(), "n_routed 8 is not divisible by n_groups 3");
    }
    SUBCASE("top_groups above n_groups") {
      model_copy c;
      c.edit_json("\"top_groups\": 2", "\"top_groups\": 5");
      CHECK_ERROR_NAMES(c.load_error(), "top_groups 5 is more than n_groups 4");
    }
    SUBCASE("top_k above the experts of the kept groups") {
      model_copy c;
      c.edit_json("\"top_k\": 2", "\"top_k\": 5");
      CHECK_ERROR_NAMES(c.load_error(), "top_k 5 is more than the 4 experts in top_groups (2) groups of 2");
    }
    SUBCASE("an odd head dimension") {
      model_copy c;
      c.edit_json("\"n_heads\": 2", "\"n_heads\": 32");
      CHECK_ERROR_NAMES(c.load_error(), "head_dim = d_model / n_heads = 1 must be even");
    }
    SUBCASE("a missing architecture field") {
      model_copy c;
      c.edit_json("\"ctx_frames\": 8,", "");
      CHECK_ERROR_NAMES(c.load_error(), "architecture.ctx_frames is missing");
    }
    SUBCASE("an unknown architecture field") {
      model_copy c;
      c.edit_json("\"ctx_frames\": 8,", "\"ctx_frames\": 8, \"n_experts_per_token\": 3,");
      auto e = c.load_error();
      CHECK(e.code == errc::unsupported);
      CHECK_ERROR_NAMES(e, "architecture.n_experts_per_token is not an architecture field this engine knows");
    }
    SUBCASE("a field of the wrong type") {
      model_copy c;
      c.edit_json("\"d_model\": 32", "\"d_model\": \"32\"");
      CHECK_ERROR_NAMES(c.load_error(), "architecture.d_model must be an integer");
    }
    SUBCASE("features that disagree with the architecture") {
      model_copy c;
      c.edit_json("\"num_mel_bins\": 80", "\"num_mel_bins\": 64");
      CHECK_ERROR_NAMES(c.load_error(), "features.num_mel_bins 64 differs from architecture.n_mels 80");
    }
    SUBCASE("a streaming window that cannot stream") {
      model_copy c;
      c.edit_json("\"chunk_frames\": 4,\n    \"left_chunks\": 2\n  }", "\"chunk_frames\": 0,\n    \"left_chunks\": 2\n  }");
      CHECK_ERROR_NAMES(c.load_error(), "streaming.chunk_frames = 0");
    }
    SUBCASE("a consistent architecture the weights do not match: more layers") {
      model_copy c;
      c.edit_json("\"n_layers\": 2", "\"n_layers\": 3");
      auto e = c.load_error();
      CHECK_ERROR_NAMES(e, "missing tensor blocks.2.ln1.weight");
      CHECK_ERROR_NAMES(e, "more problems");
    }
    SUBCASE("a consistent architecture the weights do not match: expert width") {
      model_copy c;
      c.edit_json("\"expert_hidden\": 16", "\"expert_hidden\": 12");
      CHECK_ERROR_NAMES(c.load_error(), "blocks.0.moe.experts.0.w_gate.weight has shape [16, 32], model.json's "
                                        "architecture needs [12, 32] = [expert_hidden, d_model]");
    }
    SUBCASE("tokens.txt with a token too few") {
      model_copy c;
      auto text = sluice::test::read_text(c.dir.file("tokens.txt"));
      text.erase(text.find("z\n"), 2);
      write_text(c.dir.file("tokens.txt"), text);
      auto e = c.load_error();
      CHECK_ERROR_NAMES(e, "tokens.txt has 28 tokens, model.json's architecture.vocab_size is 29");
    }
    SUBCASE("a weights path that leaves the model directory") {
      model_copy c;
      c.edit_json("\"weights.safetensors\"", "\"../weights.safetensors\"");
      CHECK_ERROR_NAMES(c.load_error(), "must be a plain file name in the model directory");
    }
    SUBCASE("no model.json") {
      CHECK(load_model("/nonexistent-model-dir").error().code == errc::io);
    }
  }
}
