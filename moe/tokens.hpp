#pragma once
/// The model's output vocabulary (tokens.txt): one token per line, id = line number (from 0).
/// Id 0 is the CTC blank "<blank>". Two kinds of vocabulary:
///  - characters: one character per token, "<space>" stands for the space between words;
///  - word pieces: the pieces of a SentencePiece model (piece_tokenizer.hpp) in the tokenizer's id
///    order from line 1 (token id = tokenizer id + 1). A piece that begins a word starts with
///    U+2581 "▁"; there is no "<space>": a word ends where the next word-start piece begins.
/// A piece vocabulary needs its tokenizer (attach_tokenizer) before it can spell words.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/error.hpp"
#include "moe/piece_tokenizer.hpp"

namespace sluice::moe {

class token_table {
 public:
  static constexpr std::string_view blank_token = "<blank>";
  static constexpr std::string_view space_token = "<space>";
  /// U+2581, SentencePiece's mark of a word-start piece.
  static constexpr std::string_view word_mark = "\xe2\x96\x81";

  /// Parses tokens.txt text; `source` names it in messages. Errors: empty file, duplicate or
  /// empty tokens, no "<blank>" at id 0.
  static result<token_table> parse(std::string_view text, std::string_view source);
  static result<token_table> load(const std::string& path);

  /// Makes this a word-piece vocabulary spelled by `tokenizer`. errc::invalid_config unless the
  /// tokens after <blank> are exactly the tokenizer's pieces, in its id order (`source` names the
  /// pair in the message, e.g. the model directory).
  result<void> attach_tokenizer(std::shared_ptr<const piece_tokenizer> tokenizer, std::string_view source);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t blank_id() const { return 0; }
  /// Id of "<space>", or -1 when the vocabulary has none (word pieces, or unseparated characters).
  int32_t space_id() const { return space_id_; }
  /// True for a word-piece vocabulary (a tokenizer is attached).
  bool pieces() const { return tokenizer_ != nullptr; }
  /// True when any token starts with the word mark (tokens.txt lists word pieces).
  bool has_word_marks() const { return has_word_marks_; }
  /// Whether the token begins a new word: a word-start piece of a piece vocabulary (never for
  /// characters, whose words are separated by <space>).
  bool starts_word(int32_t id) const {
    return pieces() && id >= 0 && id < size() && starts_word_[static_cast<std::size_t>(id)];
  }
  /// The token's text as it appears inside a word: "<space>" -> " "; a piece without its word mark.
  std::string_view text(int32_t id) const;
  /// Token id for a token string (as in tokens.txt), or -1.
  int32_t id_of(std::string_view token) const;
  /// Maps text to token ids: characters one by one (' ' -> <space>), pieces through the
  /// tokenizer. errc::invalid_argument naming what has no token.
  result<std::vector<int32_t>> encode(std::string_view text) const;
  /// One word (no white space) as the tokens the decoders spell it with: characters (a character
  /// without a token of its own is tried lowercased) or the tokenizer's pieces (the word is tried
  /// lowercased when a piece is unknown). errc::invalid_argument naming the character or word.
  result<std::vector<int32_t>> spell_word(std::string_view word) const;

 private:
  std::vector<std::string> tokens_;
  std::vector<char> starts_word_;  ///< per token: begins with word_mark
  std::unordered_map<std::string, int32_t> index_;
  int32_t space_id_ = -1;
  bool has_word_marks_ = false;
  std::shared_ptr<const piece_tokenizer> tokenizer_;
};

}  // namespace sluice::moe
