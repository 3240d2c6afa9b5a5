// Redaction across utterances (redaction_carry): a card number read over several finals of one
// stream is masked in every piece. Card numbers are the public test numbers 4111 1111 1111 1111
// and 5555 5555 5555 4444; the split cases are every cut of the spoken words into two and three
// utterances, and the property checked is the one that matters: no output shows a group of four
// of the card's digits, and all outputs together show fewer digits than one group.

#include <doctest/doctest.h>

#include <sstream>

#include "moe/postproc/redaction.hpp"
#include "tests/moe/postproc/postproc_test_util.hpp"

using namespace sluice::moe::postproc;
using namespace sluice::moe::postproc::test;

namespace {

const std::string visa_by_digit = "four one one one one one one one one one one one one one one one";
const std::string mastercard_double = "five five five five double five five five triple five five four four four four";
constexpr int64_t pause_ms = 1000;  // silence between two utterances

// One stream: its finals in order, word times running on across them.
struct stream {
  postprocessor pp{shipped_grammar()};
  postproc_options opt;
  redaction_carry carry;
  int64_t clock_ms = 0;

  postprocessed say(const std::string& text, bool is_final = true) {
    auto w = timed(text);
    for (auto& x : w) {
      x.start_ms += clock_ms;
      x.end_ms += clock_ms;
    }
    if (is_final) clock_ms += static_cast<int64_t>(w.size()) * word_ms + pause_ms;
    return pp.run(w, opt, is_final, &carry);
  }
};

int digits_in(const std::string& s) {
  int n = 0;
  for (const char c : s) n += c >= '0' && c <= '9';
  return n;
}

// Spoken digit words ("four", "oh") in the lexical form.
int digit_words_in(const std::string& s) {
  static const std::vector<std::string> words = {"zero", "oh", "one", "two", "three", "four", "five",
                                                 "six", "seven", "eight", "nine", "double", "triple"};
  std::istringstream in(s);
  int n = 0;
  for (std::string w; in >> w;) n += std::find(words.begin(), words.end(), w) != words.end();
  return n;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string join(const std::vector<std::string>& w, std::size_t a, std::size_t b) {
  std::string out;
  for (std::size_t i = a; i < b; ++i) out += (out.empty() ? "" : " ") + w[i];
  return out;
}

// Says `text` cut at `cuts` (word indices) as consecutive finals of one stream; checks that no
// single output shows four digits and that all of them together show at most `most` digits.
void check_split(const std::string& text, const std::vector<std::size_t>& cuts, int most) {
  const auto w = split_words(text);
  stream s;
  int shown = 0, spoken = 0;
  std::size_t from = 0;
  std::string outputs;
  for (std::size_t k = 0; k <= cuts.size(); ++k) {
    const auto to = k < cuts.size() ? cuts[k] : w.size();
    const auto r = s.say(join(w, from, to));
    outputs += " | " + r.display_text;
    CHECK_MESSAGE(digits_in(r.display_text) < 4, outputs);
    shown += digits_in(r.display_text);
    spoken += digit_words_in(r.lexical_text);
    from = to;
  }
  CHECK_MESSAGE(shown <= most, outputs);
  CHECK_MESSAGE(spoken <= most, outputs);
}

}  // namespace

TEST_CASE("redaction carry: a card read in four groups, one utterance each, is masked in every piece") {
  REQUIRE(shipped_grammar());
  stream s;
  CHECK(s.say("my card number is four one one one").display_text == "My card number is [card].");
  for (int k = 0; k < 3; ++k) {
    const auto r = s.say("one one one one");
    CHECK(r.display_text == "[card].");
    CHECK(r.lexical_text == "[card]");
    REQUIRE(r.redactions.size() == 1);
    CHECK(r.redactions[0].start_ms == s.clock_ms - pause_ms - 4 * word_ms);  // the four words' span
  }
  // Control: the same groups redacted one by one (as before carrying) show the later groups.
  const postprocessor pp(shipped_grammar());
  CHECK(pp.run(timed("one one one one"), {}, true).display_text == "1111.");
}

TEST_CASE("redaction carry: groups with no context word are masked too, the first as an unfinished number") {
  stream s;
  const auto first = s.say("four one one one");
  CHECK(first.display_text == "[card].");
  REQUIRE(first.redactions.size() == 1);
  CHECK(first.redactions[0].kind == redaction_kind::unfinished_number);
  for (int k = 0; k < 3; ++k) CHECK(s.say("one one one one").display_text == "[card].");
}

TEST_CASE("redaction carry: every cut of a card read digit by digit into two or three utterances") {
  // With a context word nothing should show, but a first piece under context_digits_min digits
  // right after it ("... card number is four | one one ...") is shown: at most three digits.
  // With no context word the first piece under partial_digits_min digits is shown: at most three.
  for (const std::string& text :
       {"my card number is " + visa_by_digit, visa_by_digit, "card " + mastercard_double, mastercard_double}) {
    const auto n = split_words(text).size();
    CAPTURE(text);
    for (std::size_t a = 1; a < n; ++a) {
      CAPTURE(a);
      check_split(text, {a}, 3);
      for (std::size_t b = a + 1; b < n; ++b) {
        CAPTURE(b);
        check_split(text, {a, b}, 3);
      }
    }
  }
}

TEST_CASE("redaction carry: one digit per utterance shows at most three digits") {
  stream s;
  int shown = 0;
  for (const auto& w : split_words(visa_by_digit)) shown += digit_words_in(s.say(w).lexical_text);
  // "four", "one", "one" (single digits stay words); the fourth completes a group and is masked.
  CHECK(shown == 3);
}

TEST_CASE("redaction carry: a context word at the end of an utterance covers the number in the next") {
  stream s;
  s.say("and your account number please");
  const auto r = s.say("it is one two three");
  CHECK(r.display_text == "It is [account].");
  REQUIRE(r.redactions.size() == 1);
  CHECK(r.redactions[0].kind == redaction_kind::account);
  stream e;
  e.say("what is the expiry date");
  CHECK(e.say("oh four twenty six").display_text == "[expiry].");
  // Control: the number alone shows (three digits: too short to be masked as an unfinished card).
  CHECK(stream{}.say("it is one two three").display_text == "It is 123.");
}

TEST_CASE("redaction carry: the context closes after redact_carry_finals finals and after redact_carry_ms") {
  stream s;
  s.opt.carry = {2, 15000};
  s.say("my card number is " + visa_by_digit);
  s.say("thank you");
  s.say("one moment please");
  CHECK(s.say("it is one two three").display_text == "It is 123.");
  stream t;
  t.opt.carry = {2, 15000};
  t.say("my card number is " + visa_by_digit);
  t.clock_ms += 16000;
  CHECK(t.say("it is one two three").display_text == "It is 123.");
  // Within both limits the same words are masked.
  stream u;
  u.opt.carry = {2, 15000};
  u.say("my card number is " + visa_by_digit);
  u.say("thank you");
  CHECK(u.say("it is one two three").display_text == "It is [card].");
}

TEST_CASE("redaction carry: a partial reads the context and does not change it") {
  stream s;
  s.say("my card number is four one one one");
  const auto before = s.carry;
  CHECK(s.say("one one", false).display_text == "[card]");
  CHECK(s.carry.finals_left == before.finals_left);
  CHECK(s.carry.until_ms == before.until_ms);
  CHECK(s.carry.trailing_digits == before.trailing_digits);
}

TEST_CASE("redaction carry: off (0 finals) each final is redacted alone, cards off masks no carried digits") {
  stream s;
  s.opt.carry.finals = 0;
  CHECK(s.say("four one one one").display_text == "4111.");
  CHECK(s.say("one one one one").display_text == "1111.");
  stream t;
  t.opt.redact.cards = false;
  t.say("my card number is four one one one");
  CHECK(t.say("one one one one").display_text == "1111.");
}
