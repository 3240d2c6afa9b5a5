#pragma once
// Shared by the postproc tests: the shipped grammar, and words with made-up times (word k spans
// [k*100, k*100+80) ms) so spans can be checked by hand.

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "moe/postproc/postprocessor.hpp"

namespace sluice::moe::postproc::test {

inline std::shared_ptr<const itn_grammar> shipped_grammar() {
  static const auto g = [] {
    auto r = itn_grammar::parse(builtin_itn_grammar(), "builtin");
    return r ? std::make_shared<const itn_grammar>(std::move(*r)) : nullptr;
  }();
  return g;
}

constexpr int64_t word_ms = 100;
constexpr int64_t word_len_ms = 80;

inline std::vector<spoken_word> timed(const std::string& text) {
  std::vector<spoken_word> out;
  std::istringstream in(text);
  int64_t k = 0;
  for (std::string w; in >> w; ++k) out.push_back({w, k * word_ms, k * word_ms + word_len_ms, 0.9f});
  return out;
}

}  // namespace sluice::moe::postproc::test
