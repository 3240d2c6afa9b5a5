// The ITN against a table written by hand (tests/data/postproc/itn_cases.tsv), plus the
// contracts the table cannot show: word times and spoken forms carried onto written tokens,
// and grammar files that are wrong being refused with their line.

#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "moe/postproc/itn.hpp"

using namespace sluice::moe::postproc;

namespace {

const itn_grammar& grammar() {
  static const auto g = [] {
    auto r = itn_grammar::load(SLUICE_SOURCE_DIR "/moe/postproc/data/en_itn.grammar");
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message));
    return std::move(*r);
  }();
  return g;
}

}  // namespace

TEST_CASE("ITN: every case of the hand-written table") {
  std::ifstream in(SLUICE_TEST_DATA_DIR "/postproc/itn_cases.tsv");
  REQUIRE(in);
  const inverse_normalizer itn(grammar());
  int cases = 0, failures = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    REQUIRE_MESSAGE(tab != std::string::npos, line);
    const auto spoken = line.substr(0, tab), written = line.substr(tab + 1);
    const auto got = join_written(itn.apply_text(spoken));
    ++cases;
    if (got != written) ++failures;
    CHECK_MESSAGE(got == written, "\"" << spoken << "\" -> \"" << got << "\", expected \"" << written << "\"");
  }
  MESSAGE(cases << " cases, " << failures << " wrong");
  CHECK(cases >= 100);
}

TEST_CASE("ITN: a written token spans its spoken words' times and keeps its spoken form") {
  const inverse_normalizer itn(grammar());
  const std::vector<spoken_word> words = {
      {"charged", 0, 400, 0.9f},   {"forty", 500, 800, 0.8f}, {"nine", 800, 1000, 0.7f},
      {"dollars", 1000, 1400, 0.95f}, {"today", 1500, 1900, 0.6f},
  };
  const auto t = itn.apply(words);
  REQUIRE(t.size() == 3);
  CHECK(t[0].text == "charged");
  CHECK(t[1].text == "$49");
  CHECK(t[1].kind == token_kind::money);
  CHECK(t[1].spoken == "forty nine dollars");
  CHECK(t[1].first == 1);
  CHECK(t[1].count == 3);
  CHECK(t[1].start_ms == 500);
  CHECK(t[1].end_ms == 1400);
  CHECK(t[1].confidence == doctest::Approx(0.7f));
  CHECK(t[2].first == 4);
  CHECK(t[2].start_ms == 1500);
}

TEST_CASE("ITN grammar: a bad file is refused naming its line, a missing one names its path") {
  auto r = itn_grammar::parse("[settings]\nsmall_number_max = 9\n[units]\none 1\n", "g.txt");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.find("g.txt:4") != std::string::npos);
  r = itn_grammar::parse("[settings]\nsmall_number_max = nine\n", "g.txt");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.find("must be an integer") != std::string::npos);
  r = itn_grammar::parse("[units]\none = 1\n", "g.txt");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.find("missing section") != std::string::npos);
  r = itn_grammar::load("/nonexistent/en.grammar");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.find("/nonexistent/en.grammar") != std::string::npos);
}

TEST_CASE("ITN: the grammar is data: a word added to a table is used without code changes") {
  auto base = itn_grammar::load(SLUICE_SOURCE_DIR "/moe/postproc/data/en_itn.grammar");
  REQUIRE(base);
  std::ifstream in(SLUICE_SOURCE_DIR "/moe/postproc/data/en_itn.grammar");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text += "\n[currency_extra_for_test]\nx = y\n";
  const auto pos = text.find("[currency]\n");
  REQUIRE(pos != std::string::npos);
  text.insert(pos + std::string("[currency]\n").size(), "yen = ¥\n");
  auto g = itn_grammar::parse(text, "edited");
  REQUIRE(g);
  CHECK(join_written(inverse_normalizer(*base).apply_text("twenty yen")) == "20 yen");
  CHECK(join_written(inverse_normalizer(*g).apply_text("twenty yen")) == "¥20");
}
