#include "moe/tokens.hpp"

#include <fstream>
#include <sstream>

namespace sluice::moe {

result<token_table> token_table::parse(std::string_view text, std::string_view source) {
  token_table t;
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (pos >= text.size()) break;  // a trailing newline
      return fail(errc::corrupt, std::string(source) + ":" + std::to_string(line_no) + ": empty token");
    }
    std::string tok(line);
    if (t.index_.count(tok))
      return fail(errc::corrupt, std::string(source) + ":" + std::to_string(line_no) + ": duplicate token '" + tok + "'");
    t.index_.emplace(tok, static_cast<int32_t>(t.tokens_.size()));
    if (tok == space_token) t.space_id_ = static_cast<int32_t>(t.tokens_.size());
    t.tokens_.push_back(tok);
  }
  if (t.tokens_.empty()) return fail(errc::corrupt, std::string(source) + ": no tokens");
  if (t.tokens_[0] != blank_token)
    return fail(errc::corrupt, std::string(source) + ": token 0 must be " + std::string(blank_token) + ", found '" +
                                   t.tokens_[0] + "'");
  return t;
}

result<token_table> token_table::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, "cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

std::string_view token_table::text(int32_t id) const {
  if (id == space_id_) return " ";
  if (id < 0 || id >= size()) return {};
  return tokens_[static_cast<std::size_t>(id)];
}

int32_t token_table::id_of(std::string_view token) const {
  auto it = index_.find(std::string(token));
  return it == index_.end() ? -1 : it->second;
}

result<std::vector<int32_t>> token_table::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (char c : text) {
    int32_t id = c == ' ' ? space_id_ : id_of(std::string_view(&c, 1));
    if (id < 0) return fail(errc::invalid_argument, std::string("no token for character '") + c + "'");
    ids.push_back(id);
  }
  return ids;
}

}  // namespace sluice::moe
