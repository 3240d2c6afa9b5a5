// The written token's helpers, apart from the rules that make tokens (itn.cpp).

#include <sstream>

#include "moe/postproc/itn.hpp"

namespace sluice::moe::postproc {

const char* to_string(token_kind k) {
  switch (k) {
    case token_kind::word: return "word";
    case token_kind::cardinal: return "cardinal";
    case token_kind::ordinal: return "ordinal";
    case token_kind::decimal: return "decimal";
    case token_kind::money: return "money";
    case token_kind::percent: return "percent";
    case token_kind::date: return "date";
    case token_kind::time: return "time";
    case token_kind::year: return "year";
    case token_kind::digits: return "digits";
    case token_kind::code: return "code";
    case token_kind::email: return "email";
  }
  return "word";
}

std::vector<written_token> inverse_normalizer::apply_text(const std::string& text) const {
  std::vector<spoken_word> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back({w, 0, 0, 1});
  return apply(words);
}

std::string join_written(const std::vector<written_token>& tokens) {
  std::string out;
  for (const auto& t : tokens) out += (out.empty() ? "" : " ") + t.text;
  return out;
}

}  // namespace sluice::moe::postproc
