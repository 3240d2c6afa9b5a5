#pragma once
/// The model's output vocabulary (tokens.txt): one token per line, id = line number (from 0).
/// Id 0 is the CTC blank "<blank>"; "<space>" stands for the space between words.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/error.hpp"

namespace sluice::moe {

class token_table {
 public:
  static constexpr std::string_view blank_token = "<blank>";
  static constexpr std::string_view space_token = "<space>";

  /// Parses tokens.txt text; `source` names it in messages. Errors: empty file, duplicate or
  /// empty tokens, no "<blank>" at id 0.
  static result<token_table> parse(std::string_view text, std::string_view source);
  static result<token_table> load(const std::string& path);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t blank_id() const { return 0; }
  /// Id of "<space>", or -1 when the vocabulary has none (then words are not separated).
  int32_t space_id() const { return space_id_; }
  /// The token's text as it appears in output ("<space>" -> " ").
  std::string_view text(int32_t id) const;
  /// Token id for a token string (as in tokens.txt), or -1.
  int32_t id_of(std::string_view token) const;
  /// Maps text to token ids character by character (' ' -> <space>); characters with no token
  /// are an errc::invalid_argument naming the character (hotwords use this).
  result<std::vector<int32_t>> encode(std::string_view text) const;

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> index_;
  int32_t space_id_ = -1;
};

}  // namespace sluice::moe
