#pragma once
/// Sentences from punctuated words, for subtitles (one cue per sentence) and for display text.

#include <cstddef>
#include <string>
#include <vector>

#include "moe/punct/punctuator.hpp"

namespace sluice::moe::punct {

/// Words [begin, end) of one sentence.
struct sentence_span {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool operator==(const sentence_span&) const = default;
};

/// Splits after every '.' or '?'; the words after the last one form a final sentence. A sentence
/// longer than `max_words` (0 = no limit) is cut after its last ',' within the limit, else hard
/// at the limit, so no cue is longer than `max_words`. Covers every word exactly once, in order.
std::vector<sentence_span> split_sentences(const std::vector<word_mark>& marks, std::size_t max_words = 0);

/// Display text: words joined by single spaces, the first letter upper-cased where `marks` says,
/// each mark written after its word. `marks` must be as long as `words` (extra words are written
/// unmarked, extra marks ignored).
std::string render(const std::vector<std::string>& words, const std::vector<word_mark>& marks);

}  // namespace sluice::moe::punct
