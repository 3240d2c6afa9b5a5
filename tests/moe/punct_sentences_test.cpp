// Sentence splitting for subtitles and the display rendering of punctuated words.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "moe/punct/sentences.hpp"

using namespace sluice::moe::punct;

namespace {

// Marks from a compact spelling: one char per word, '-' = none, 'C' = capitalize and none.
std::vector<word_mark> marks_of(const std::string& spec) {
  std::vector<word_mark> out;
  for (char c : spec) out.push_back({c == 'C', c == '-' || c == 'C' ? char{0} : c});
  return out;
}

}  // namespace

TEST_CASE("punct sentences: split after every . and ?, the rest is a last sentence") {
  CHECK(split_sentences(marks_of("--.-?--")) ==
        std::vector<sentence_span>{{0, 3}, {3, 5}, {5, 7}});
  CHECK(split_sentences(marks_of("--,-.")) == std::vector<sentence_span>{{0, 5}});
  CHECK(split_sentences(marks_of("?")) == std::vector<sentence_span>{{0, 1}});
  CHECK(split_sentences({}).empty());
}

TEST_CASE("punct sentences: a sentence over max_words is cut after its last comma within the limit, else hard") {
  // 9 words, commas after words 2 and 5 (indices 1 and 4), limit 4: [0,2) then [2,5) then [5,9).
  CHECK(split_sentences(marks_of("-,--,---."), 4) ==
        std::vector<sentence_span>{{0, 2}, {2, 5}, {5, 9}});
  // No comma: hard cuts every 3 words.
  CHECK(split_sentences(marks_of("-------"), 3) ==
        std::vector<sentence_span>{{0, 3}, {3, 6}, {6, 7}});
  // Sentences within the limit are untouched by it.
  CHECK(split_sentences(marks_of("--.--?"), 3) == std::vector<sentence_span>{{0, 3}, {3, 6}});
}

TEST_CASE("punct sentences: render writes capitals and marks") {
  std::vector<word_mark> m(6);
  m[0].capitalize = true;
  m[2].mark = ',';
  m[3].capitalize = true;
  m[4].mark = '?';
  m[5] = {true, '.'};
  CHECK(render({"hello", "there", "mary", "i", "see", "ok"}, m) == "Hello there mary, I see? Ok.");
  CHECK(render({"a", "b"}, {}) == "a b");
  CHECK(render({}, {}).empty());
}
