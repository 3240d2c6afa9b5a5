#include "moe/tokens.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace sluice::moe {

namespace {

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has_space(std::string_view s) {
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c))) return true;
  return false;
}

}  // namespace

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
    const bool marked = tok.starts_with(word_mark);
    t.has_word_marks_ = t.has_word_marks_ || marked;
    t.starts_word_.push_back(marked ? 1 : 0);
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

result<void> token_table::attach_tokenizer(std::shared_ptr<const piece_tokenizer> tokenizer, std::string_view source) {
  if (!tokenizer) return fail(errc::invalid_config, std::string(source) + ": no tokenizer");
  const std::string where(source);
  if (tokenizer->size() + 1 != size())
    return fail(errc::invalid_config, where + ": the tokens file has " + std::to_string(size()) +
                                          " tokens, the tokenizer has " + std::to_string(tokenizer->size()) +
                                          " pieces (expected <blank> plus one token per piece)");
  for (int32_t id = 0; id < tokenizer->size(); ++id) {
    const std::string piece = tokenizer->piece(id);
    if (piece != tokens_[static_cast<std::size_t>(id) + 1])
      return fail(errc::invalid_config, where + ": token " + std::to_string(id + 1) + " is '" +
                                            tokens_[static_cast<std::size_t>(id) + 1] + "', the tokenizer's piece " +
                                            std::to_string(id) + " is '" + piece +
                                            "': the tokens file does not belong to this tokenizer");
  }
  if (space_id_ >= 0)
    return fail(errc::invalid_config, where + ": a word-piece vocabulary has no " + std::string(space_token));
  tokenizer_ = std::move(tokenizer);
  return {};
}

std::string_view token_table::text(int32_t id) const {
  if (id < 0 || id >= size()) return {};
  if (id == space_id_) return " ";
  // A piece vocabulary's unknown piece spells nothing (the recipe's decode drops it too).
  if (pieces() && id == tokenizer_->unk_id() + 1) return {};
  std::string_view t = tokens_[static_cast<std::size_t>(id)];
  if (pieces() && starts_word_[static_cast<std::size_t>(id)]) t.remove_prefix(word_mark.size());
  return t;
}

int32_t token_table::id_of(std::string_view token) const {
  auto it = index_.find(std::string(token));
  return it == index_.end() ? -1 : it->second;
}

result<std::vector<int32_t>> token_table::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  if (pieces()) {
    auto sp = tokenizer_->encode(text);
    if (!sp) return tl::unexpected(sp.error());
    for (int32_t p : *sp) {
      if (p == tokenizer_->unk_id())
        return fail(errc::invalid_argument, "no pieces for part of '" + std::string(text) + "'");
      ids.push_back(p + 1);
    }
    return ids;
  }
  for (char c : text) {
    int32_t id = c == ' ' ? space_id_ : id_of(std::string_view(&c, 1));
    if (id < 0) return fail(errc::invalid_argument, std::string("no token for character '") + c + "'");
    ids.push_back(id);
  }
  return ids;
}

result<std::vector<int32_t>> token_table::spell_word(std::string_view word) const {
  if (word.empty()) return fail(errc::invalid_argument, "empty word");
  if (has_space(word)) return fail(errc::invalid_argument, std::string(word).append("' is more than one word").insert(0, 1, '\''));
  std::vector<int32_t> ids;
  if (pieces()) {
    auto spelled = encode(word);
    if (!spelled) spelled = encode(ascii_lower(word));
    if (!spelled) return fail(errc::invalid_argument, "no pieces spell the word '" + std::string(word) + "'");
    return spelled;
  }
  for (char ch : word) {
    int32_t id = id_of(std::string_view(&ch, 1));
    if (id < 0) {
      const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      id = id_of(std::string_view(&lower, 1));
    }
    if (id < 0 || id == blank_id() || id == space_id_) {
      return fail(errc::invalid_argument, std::string("no token for character '") + ch + "'");
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace sluice::moe
