#include "moe/punct/sentences.hpp"

#include <cctype>

namespace sluice::moe::punct {
namespace {

bool ends_sentence(const word_mark& m) { return m.mark == '.' || m.mark == '?'; }

// Appends [begin, end) to `out`, cutting pieces of at most max_words (0 = any length), each after
// its last comma when there is one.
void add_limited(std::vector<sentence_span>& out, const std::vector<word_mark>& marks, std::size_t begin,
                 std::size_t end, std::size_t max_words) {
  while (max_words != 0 && end - begin > max_words) {
    std::size_t cut = begin + max_words;
    for (std::size_t i = begin + max_words; i > begin; --i) {
      if (marks[i - 1].mark == ',') {
        cut = i;
        break;
      }
    }
    out.push_back({begin, cut});
    begin = cut;
  }
  if (begin < end) out.push_back({begin, end});
}

}  // namespace

std::vector<sentence_span> split_sentences(const std::vector<word_mark>& marks, std::size_t max_words) {
  std::vector<sentence_span> out;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < marks.size(); ++i) {
    if (ends_sentence(marks[i])) {
      add_limited(out, marks, begin, i + 1, max_words);
      begin = i + 1;
    }
  }
  add_limited(out, marks, begin, marks.size(), max_words);
  return out;
}

std::string render(const std::vector<std::string>& words, const std::vector<word_mark>& marks) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ' ';
    std::string w = words[i];
    const bool marked = i < marks.size();
    if (marked && marks[i].capitalize && !w.empty())
      w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
    out += w;
    if (marked && marks[i].mark != 0) out += marks[i].mark;
  }
  return out;
}

}  // namespace sluice::moe::punct
