// The committed punctuation model (models/punct/) in C++ against the PyTorch model it was exported
// from: golden logits written by tools/train/train_punct.py finish (tests/data/punct/golden.txt).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "moe/punct/punctuator.hpp"

using namespace sluice;
using namespace sluice::moe::punct;

namespace {

const std::string model_dir = std::string(SLUICE_SOURCE_DIR) + "/models/punct";
const std::string golden_path = std::string(SLUICE_TEST_DATA_DIR) + "/punct/golden.txt";

// Float32 tolerance. PyTorch's convolutions sum in another order than our loops; each dot product
// has at most kernel·in = 5·128 = 640 terms, so its rounding error is below 640·2^-24 ≈ 4e-5 of
// the sum of the terms' magnitudes; over 3 layers and the head that is ~1.5e-4, and the sum of
// magnitudes can exceed the result, hence 5e-4 relative to (1 + |reference|).
constexpr double logit_tolerance = 5e-4;

struct golden_case {
  std::vector<std::string> words;
  std::vector<word_logits> logits;
};

std::vector<golden_case> read_golden() {
  std::vector<golden_case> cases;
  std::ifstream in(golden_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("words: ", 0) == 0) {
      golden_case c;
      std::istringstream ws(line.substr(7));
      for (std::string w; ws >> w;) c.words.push_back(w);
      cases.push_back(std::move(c));
      continue;
    }
    REQUIRE_FALSE(cases.empty());
    std::istringstream ls(line);
    word_logits row{};
    for (float& v : row) REQUIRE(static_cast<bool>(ls >> v));
    cases.back().logits.push_back(row);
  }
  return cases;
}

}  // namespace

TEST_CASE("punct: C++ inference of models/punct equals the PyTorch model's logits on the golden inputs") {
  auto p = punctuator::load(model_dir);
  REQUIRE_MESSAGE(p, (p ? "" : p.error().message));
  const auto cases = read_golden();
  REQUIRE(cases.size() >= 5);
  double worst = 0.0;
  for (const golden_case& c : cases) {
    CAPTURE(c.words.size());
    REQUIRE(c.logits.size() == c.words.size());
    const auto z = p->logits(c.words);
    REQUIRE(z.size() == c.words.size());
    for (std::size_t t = 0; t < z.size(); ++t)
      for (std::size_t k = 0; k < n_outputs; ++k) {
        const double ref = c.logits[t][k];
        worst = std::max(worst, std::abs(z[t][k] - ref) / (1.0 + std::abs(ref)));
        CHECK(std::abs(z[t][k] - ref) <= logit_tolerance * (1.0 + std::abs(ref)));
      }
  }
  MESSAGE("largest |C++ - PyTorch| / (1 + |PyTorch|): " << worst);
}

TEST_CASE("punct: run() is safe to call from several threads at once (same marks as alone)") {
  auto p = punctuator::load(model_dir);
  REQUIRE(p);
  const auto cases = read_golden();
  REQUIRE_FALSE(cases.empty());
  std::vector<std::vector<word_mark>> alone;
  for (const golden_case& c : cases) alone.push_back(p->run(c.words));
  constexpr int n_threads = 4;
  constexpr int rounds = 20;
  std::vector<std::future<bool>> done;
  for (int i = 0; i < n_threads; ++i)
    done.push_back(std::async(std::launch::async, [&] {
      for (int r = 0; r < rounds; ++r)
        for (std::size_t c = 0; c < cases.size(); ++c) {
          const auto m = p->run(cases[c].words);
          for (std::size_t t = 0; t < m.size(); ++t)
            if (m[t].capitalize != alone[c][t].capitalize || m[t].mark != alone[c][t].mark) return false;
        }
      return true;
    }));
  for (auto& f : done) CHECK(f.get());
}
