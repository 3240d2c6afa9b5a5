// The punctuation model's file reader and C++ inference on hand-built weights: every number
// below is worked out by hand from the weights, independent of PyTorch and of the code's output.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "moe/punct/punct_file.hpp"
#include "moe/punct/punctuator.hpp"

using namespace sluice;
using namespace sluice::moe::punct;

namespace {

// vocab <unk> <s> </s> a b; embed 1, hidden 1, kernel 3, dilations 1 and 2.
//   layer 0: y[t] = relu(1·x[t-1] + 10·x[t] + 100·x[t+1])
//   layer 1: h[t] += relu(1·h[t-2] + 0.5)
//   head:    [1·h, -1·h + 0.1, 2·h, 0, 0]
punct_weights tiny_weights() {
  punct_weights w;
  w.vocab = {"<unk>", "<s>", "</s>", "a", "b"};
  w.embed = 1;
  w.hidden = 1;
  w.kernel = 3;
  w.embedding = {0.0f, 1.0f, 2.0f, 3.0f, -1.0f};
  w.layers = {conv_layer{1, 1, {1.0f, 10.0f, 100.0f}, {0.0f}}, conv_layer{1, 2, {1.0f, 0.0f, 0.0f}, {0.5f}}};
  w.head_weight = {1.0f, -1.0f, 2.0f, 0.0f, 0.0f};
  w.head_bias = {0.0f, 0.1f, 0.0f, 0.0f, 0.0f};
  return w;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// The bytes tools/train/punct_model.py export() would write for `w`.
std::string serialize(const punct_weights& w) {
  std::string out = "SLPUNCT1";
  for (uint32_t v : {static_cast<uint32_t>(w.vocab.size()), w.embed, w.hidden, w.kernel,
                     static_cast<uint32_t>(w.layers.size())})
    put(out, v);
  for (const conv_layer& c : w.layers) put(out, c.dilation);
  for (float f : w.embedding) put(out, f);
  for (const conv_layer& c : w.layers) {
    for (float f : c.weight) put(out, f);
    for (float f : c.bias) put(out, f);
  }
  for (float f : w.head_weight) put(out, f);
  for (float f : w.head_bias) put(out, f);
  return out;
}

std::string vocab_text(const punct_weights& w) {
  std::string out;
  for (const std::string& t : w.vocab) out += t + "\n";
  return out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("punct: inference on hand-built weights matches the hand computation (padding, dilation, residual)") {
  const punctuator p = punctuator::from_weights(tiny_weights());
  // x = [<s> 1, a 3, b -1, </s> 2]
  // layer 0: [relu(0+10+300), relu(1+30-100), relu(3-10+200), relu(-1+20+0)] = [310, 0, 193, 19]
  // layer 1: + relu(h[t-2] + 0.5) = + [0.5, 0.5, 310.5, 0.5] → [310.5, 0.5, 503.5, 19.5]
  const auto z = p.logits({"a", "b"});
  REQUIRE(z.size() == 2);
  const word_logits a = {0.5f, -0.4f, 1.0f, 0.0f, 0.0f};
  const word_logits b = {503.5f, -503.4f, 1007.0f, 0.0f, 0.0f};
  for (std::size_t k = 0; k < n_outputs; ++k) {
    CHECK(z[0][k] == doctest::Approx(a[k]).epsilon(1e-6));
    CHECK(z[1][k] == doctest::Approx(b[k]).epsilon(1e-6));
  }
}

TEST_CASE("punct: unknown words, upper case and special-token spellings map as documented") {
  const punctuator p = punctuator::from_weights(tiny_weights());
  // "A" folds to "a"; "zzz" and the literal "<s>" are <unk> (embedding 0):
  // x = [1, 0, 3, 2] → layer 0 [relu(0+10+0), relu(1+0+300), relu(0+30+200), relu(3+20)] = [10, 301, 230, 23]
  // layer 1 adds [0.5, 0.5, 10.5, 301.5] → [10.5, 301.5, 240.5, 324.5]
  CHECK(p.logits({"zzz", "A"})[0][0] == doctest::Approx(301.5f));
  CHECK(p.logits({"zzz", "A"})[1][0] == doctest::Approx(240.5f));
  CHECK(p.logits({"<s>", "a"})[0][0] == doctest::Approx(301.5f));
  CHECK(p.logits({}).empty());
  CHECK(p.run({}).empty());
}

TEST_CASE("punct: run() applies the display rules over the model's choice") {
  punct_weights w = tiny_weights();
  // Make every word's capitalize logit negative and its best mark none: head = [-1, 1, 0, 0, 0]·h + bias.
  w.head_weight = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  w.head_bias = {-1.0f, 1.0f, 0.0f, 0.0f, 0.0f};
  const punctuator plain = punctuator::from_weights(w);
  const auto m = plain.run({"b", "i", "b", "i'm", "b"});
  REQUIRE(m.size() == 5);
  CHECK(m[0].capitalize);   // first word
  CHECK(m[1].capitalize);   // "i"
  CHECK_FALSE(m[2].capitalize);
  CHECK(m[3].capitalize);   // "i'm"
  CHECK_FALSE(m[4].capitalize);
  for (const word_mark& x : m) CHECK(x.mark == 0);
  // Now '?' wins everywhere: every word after a '?' starts a sentence.
  w.head_bias = {-1.0f, 0.0f, 0.0f, 0.0f, 1.0f};
  const auto q = punctuator::from_weights(w).run({"b", "b", "b"});
  for (const word_mark& x : q) {
    CHECK(x.mark == '?');
    CHECK(x.capitalize);
  }
}

TEST_CASE("punct: the reader accepts a well-formed file and rejects every damage with an error value") {
  const punct_weights w = tiny_weights();
  const std::string bin = serialize(w);
  const std::string vocab = vocab_text(w);
  auto ok = parse_punct(bin, vocab, "t");
  REQUIRE(ok);
  CHECK(ok->vocab == w.vocab);
  CHECK(ok->layers[1].dilation == 2);
  CHECK(ok->head_bias[1] == doctest::Approx(0.1f));

  auto code_of = [&](const std::string& b, const std::string& v) {
    auto r = parse_punct(b, v, "t");
    return r ? std::string("(accepted)") : std::string(to_string(r.error().code)) + ": " + r.error().message;
  };
  CHECK(contains(code_of("SLPU", vocab), "truncated"));
  CHECK(contains(code_of("XXPUNCT1" + bin.substr(8), vocab), "corrupt"));
  CHECK(contains(code_of(bin.substr(0, 20), vocab), "truncated"));
  CHECK(contains(code_of(bin.substr(0, bin.size() - 4), vocab), "ends inside its weights"));
  CHECK(contains(code_of(bin + "x", vocab), "after the last weight"));
  CHECK(contains(code_of(bin, vocab + "extra\n"), "vocab.txt has 6 tokens"));
  CHECK(contains(code_of(bin, "<s>\n<unk>\n</s>\na\nb\n"), "must be <unk>"));
  std::string even = bin;
  const uint32_t kernel4 = 4;
  std::memcpy(&even[8 + 3 * 4], &kernel4, 4);  // kernel field
  CHECK(contains(code_of(even, vocab), "impossible sizes"));
  std::string nan = bin;
  const float qnan = std::nanf("");
  std::memcpy(&nan[nan.size() - 4], &qnan, 4);  // last head bias
  CHECK(contains(code_of(nan, vocab), "NaN"));
}

TEST_CASE("punct: load() reports a missing or damaged model directory as an error, never a throw") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sluice_punct_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto missing = punctuator::load(dir.string());
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::io);

  fs::create_directories(dir);
  const punct_weights w = tiny_weights();
  const std::string bin = serialize(w);
  { std::ofstream(dir / "punct.bin", std::ios::binary) << bin; }
  auto no_vocab = punctuator::load(dir.string());
  REQUIRE_FALSE(no_vocab);
  CHECK(no_vocab.error().code == errc::io);
  CHECK(contains(no_vocab.error().message, "vocab.txt"));

  { std::ofstream(dir / "vocab.txt", std::ios::binary) << vocab_text(w); }
  auto good = punctuator::load(dir.string());
  REQUIRE(good);
  CHECK(good->vocab_size() == 5);

  { std::ofstream(dir / "punct.bin", std::ios::binary) << bin.substr(0, bin.size() / 2); }
  auto cut = punctuator::load(dir.string());
  REQUIRE_FALSE(cut);
  CHECK(cut.error().code == errc::truncated);
  fs::remove_all(dir);
}
