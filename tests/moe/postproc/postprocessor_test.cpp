// The two forms of a result: display (ITN, cased, punctuated) next to lexical, times carried
// onto written tokens, and the punctuation hook a model fills.

#include <doctest/doctest.h>

#include <fstream>

#include "tests/moe/postproc/postproc_test_util.hpp"

using namespace sluice::moe::postproc;
using namespace sluice::moe::postproc::test;

TEST_CASE("postprocessor: the issue's example reads as a contact center expects") {
  REQUIRE(shipped_grammar());
  const postprocessor pp(shipped_grammar());
  const auto words = timed("i was charged forty nine dollars and ninety nine cents on march tenth");
  const auto r = pp.run(words, {}, true);
  CHECK(r.display_text == "I was charged $49.99 on March 10th.");
  CHECK(r.lexical_text == "i was charged forty nine dollars and ninety nine cents on march tenth");
  REQUIRE(r.display_words.size() == 6);
  CHECK(r.display_words[3].text == "$49.99");
  CHECK(r.display_words[3].start_ms == 300);   // "forty" is word 3
  CHECK(r.display_words[3].end_ms == 980);     // "cents" is word 9
  CHECK(r.display_words[5].text == "March 10th.");  // one date token (a written token may hold blanks)
  CHECK(r.lexical_words.size() == words.size());
  CHECK(r.redactions.empty());
}

TEST_CASE("postprocessor: partials get capitals but no final period") {
  const postprocessor pp(shipped_grammar());
  CHECK(pp.run(timed("yes i think so"), {}, false).display_text == "Yes I think so");
  CHECK(pp.run(timed("yes i think so"), {}, true).display_text == "Yes I think so.");
}

TEST_CASE("postprocessor: an e-mail address keeps its case at the start of a sentence") {
  const postprocessor pp(shipped_grammar());
  CHECK(pp.run(timed("bob at example dot com"), postproc_options{true, true, {false}}, true).display_text ==
        "bob@example.com.");
}

namespace {

// A stand-in model: capitalises every word and asks a question at the end; a second one
// answers with the wrong number of decisions.
struct shouting_hook final : punctuation_hook {
  std::vector<punct_decision> punctuate(const std::vector<std::string>& w, bool) const override {
    std::vector<punct_decision> d(w.size(), {true, trailing_mark::none});
    if (!d.empty()) d.back().mark = trailing_mark::question;
    if (d.size() > 1) d[0].mark = trailing_mark::comma;
    return d;
  }
};
struct broken_hook final : punctuation_hook {
  std::vector<punct_decision> punctuate(const std::vector<std::string>&, bool) const override { return {}; }
};

}  // namespace

TEST_CASE("postprocessor: a punctuation model's decisions land on the written tokens") {
  const postprocessor pp(shipped_grammar(), std::make_shared<shouting_hook>());
  // "twenty one" is one token: it takes the capital of "twenty" and the mark of "one".
  CHECK(pp.run(timed("so is it twenty one"), {}, true).display_text == "So, Is It 21?");
  const postprocessor broken(shipped_grammar(), std::make_shared<broken_hook>());
  CHECK(broken.run(timed("so is it twenty one"), {}, true).display_text == "So is it 21.");
}

TEST_CASE("postprocessor: punctuation and ITN can be turned off for the display form") {
  const postprocessor pp(shipped_grammar());
  postproc_options opt;
  opt.punctuate = false;
  CHECK(pp.run(timed("twenty one dollars"), opt, true).display_text == "$21");
  opt.itn = false;
  CHECK(pp.run(timed("twenty one dollars"), opt, true).display_text == "twenty one dollars");
}

TEST_CASE("postprocessor: the compiled-in grammar is the shipped file") {
  std::ifstream in(SLUICE_SOURCE_DIR "/moe/postproc/data/en_itn.grammar");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == builtin_itn_grammar());
}
