#include "moe/postproc/punctuation.hpp"

#include <array>
#include <string_view>

namespace sluice::moe::postproc {

const char* to_string(trailing_mark m) {
  switch (m) {
    case trailing_mark::none: return "";
    case trailing_mark::period: return ".";
    case trailing_mark::comma: return ",";
    case trailing_mark::question: return "?";
  }
  return "";
}

std::vector<punct_decision> rule_punctuation::punctuate(const std::vector<std::string>& words, bool is_final) const {
  // The first-person pronoun and its contractions, the only words English always capitalises
  // that rules can know without a model or a name list.
  static constexpr std::array<std::string_view, 5> k_pronoun = {"i", "i'm", "i'll", "i've", "i'd"};
  std::vector<punct_decision> out(words.size());
  for (std::size_t i = 0; i < words.size(); ++i)
    for (const auto p : k_pronoun)
      if (words[i] == p) out[i].capitalize = true;
  if (!out.empty()) {
    out.front().capitalize = true;
    if (is_final) out.back().mark = trailing_mark::period;
  }
  return out;
}

}  // namespace sluice::moe::postproc
