#pragma once
/// English inverse text normalisation: spoken words (lower-case, as the decoder writes them) ->
/// written tokens ("forty nine dollars and ninety nine cents" -> "$49.99"). The vocabulary is
/// data (itn_grammar); this file holds the rules that combine it.
///
/// Every written token keeps the spoken words it came from (first/count, spoken text) and spans
/// their times: start_ms of its first spoken word, end_ms of its last, confidence the lowest of
/// theirs. Tokens cover the spoken words in order, each word exactly once.
///
/// Rules, tried in this order at each word: e-mail address, time of day, money / percentage,
/// date, digits and letters read one by one (phone, card and account numbers, spelled codes),
/// year, decimal, ordinal, cardinal, month name; otherwise the word is kept.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "moe/postproc/grammar.hpp"

namespace sluice::moe::postproc {

/// A word as the decoder gives it. Times in ms from the start of the stream.
struct spoken_word {
  std::string text;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  float confidence = 1;
};

enum class token_kind {
  word,      ///< kept as spoken
  cardinal,  ///< 42, 12,345, -5
  ordinal,   ///< 21st
  decimal,   ///< 3.14, 2.5 million
  money,     ///< $49.99, 10¢
  percent,   ///< 50%
  date,      ///< March 10th, 2024
  time,      ///< 10:30 AM
  year,      ///< 1999
  digits,    ///< a digit run: 0042, 555-123-4567, 4111 1111 1111 1111
  code,      ///< letters (and digits) read one by one: ABC, AB123
  email,     ///< john.smith@example.com
};

/// "word", "cardinal", ... (for JSON and tests).
const char* to_string(token_kind k);

struct written_token {
  std::string text;    ///< the written form
  std::string spoken;  ///< the spoken words it replaces, joined by single spaces
  token_kind kind = token_kind::word;
  int first = 0;  ///< index of its first spoken word
  int count = 1;  ///< how many spoken words
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  float confidence = 1;
};

class inverse_normalizer {
 public:
  /// Keeps a reference: `g` must outlive the normaliser.
  explicit inverse_normalizer(const itn_grammar& g) : g_(g) {}
  std::vector<written_token> apply(std::span<const spoken_word> words) const;
  /// Convenience for text: splits on blanks, times all zero.
  std::vector<written_token> apply_text(const std::string& text) const;

 private:
  const itn_grammar& g_;
};

/// The written tokens' texts joined by single spaces.
std::string join_written(const std::vector<written_token>& tokens);

}  // namespace sluice::moe::postproc
