#pragma once
/// Word error counting for the tests that judge a transcript: the words of a text and the
/// word-level Levenshtein distance (substitutions + insertions + deletions) between two of them.

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace sluice::test {

/// Whitespace-separated words.
inline std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// Levenshtein distance (substitutions + insertions + deletions) between two sequences: the
/// characters of two strings, two word lists, two label sequences.
template <class Seq>
std::size_t sequence_edits(const Seq& a, const Seq& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? std::size_t{1} : std::size_t{0})});
      diag = up;
    }
  }
  return row[b.size()];
}

/// Word-level Levenshtein distance between `a` and `b`.
inline std::size_t word_edits(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return sequence_edits(a, b);
}

/// Word error rate of `hypothesis` against a non-empty `reference` text.
inline double word_error_rate(const std::string& reference, const std::string& hypothesis) {
  const auto ref = words_of(reference);
  if (ref.empty()) return hypothesis.empty() ? 0.0 : 1.0;
  return static_cast<double>(word_edits(ref, words_of(hypothesis))) / static_cast<double>(ref.size());
}

}  // namespace sluice::test
