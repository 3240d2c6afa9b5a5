// Redaction on the written tokens: which numbers are masked and why (Luhn, context words,
// partial tails), the spans a recorder bleeps, and a tenant's own words. Card numbers used are
// the public test numbers (4111 1111 1111 1111 and 5555 5555 5555 4444 pass Luhn; ...1112 does
// not).

#include <doctest/doctest.h>

#include "moe/postproc/redaction.hpp"
#include "tests/moe/postproc/postproc_test_util.hpp"

using namespace sluice::moe::postproc;
using namespace sluice::moe::postproc::test;

namespace {

const std::string visa_by_digit = "four one one one one one one one one one one one one one one one";

postprocessed run(const std::string& text, bool is_final = true, redaction_rules rules = {}) {
  const postprocessor pp(shipped_grammar());
  postproc_options opt;
  opt.redact = std::move(rules);
  return pp.run(timed(text), opt, is_final);
}

}  // namespace

TEST_CASE("Luhn: the public test numbers pass, a changed digit fails") {
  CHECK(luhn_valid("4111111111111111"));
  CHECK(luhn_valid("5555555555554444"));
  CHECK(luhn_valid("378282246310005"));
  CHECK_FALSE(luhn_valid("4111111111111112"));
  CHECK_FALSE(luhn_valid("5555555555554445"));
  CHECK_FALSE(luhn_valid(""));
}

TEST_CASE("redaction: a card read digit by digit is masked in both forms and its span covers its words") {
  REQUIRE(shipped_grammar());
  const auto r = run("my card number is " + visa_by_digit);
  CHECK(r.display_text == "My card number is [card].");
  CHECK(r.lexical_text == "my card number is [card]");
  REQUIRE(r.redactions.size() == 1);
  CHECK(r.redactions[0].kind == redaction_kind::card);
  // Words 4 .. 19 are the sixteen digits.
  CHECK(r.redactions[0].start_ms == 4 * word_ms);
  CHECK(r.redactions[0].end_ms == 19 * word_ms + word_len_ms);
  REQUIRE(r.lexical_words.size() == 5);
  CHECK(r.lexical_words[4].text == "[card]");
  CHECK(r.lexical_words[4].start_ms == 400);
}

TEST_CASE("redaction: a Luhn-valid number is masked with no context word, an invalid one is not") {
  CHECK(run("it is " + visa_by_digit).display_text == "It is [card].");
  CHECK(run("it is four one one one one one one one one one one one one one one two").display_text ==
        "It is 4111 1111 1111 1112.");
}

TEST_CASE("redaction: after a card context word a number that fails Luhn is masked anyway") {
  CHECK(run("card four one one one one one one one one one one one one one one two").display_text == "Card [card].");
}

TEST_CASE("redaction: a card read as four grouped cardinals, with double and triple, is masked") {
  const std::string grp = "four thousand one hundred eleven one thousand one hundred eleven "
                          "one thousand one hundred eleven one thousand one hundred eleven";
  CHECK(run("number " + grp).display_text == "Number [card].");
  CHECK(run("number five five five five double five five five triple five five four four four four").display_text ==
        "Number [card].");
}

TEST_CASE("redaction: expiry, CVV, social security and account numbers in context") {
  CHECK(run("it expires oh four twenty six").display_text == "It expires [expiry].");
  CHECK(run("the expiration date is april twenty six").display_text == "The expiration date is [expiry].");
  CHECK(run("the security code is one two three").display_text == "The security code is [cvv].");
  CHECK(run("my social security number is one two three four five six seven eight nine").display_text ==
        "My social security number is [ssn].");
  // Nine digits with no context are not an SSN.
  CHECK(run("reference one two three four five six seven eight nine").display_text == "Reference 123456789.");
  CHECK(run("account number one two three four five six").display_text == "Account number [account].");
}

TEST_CASE("redaction: e-mail addresses and a tenant's phrases") {
  CHECK(run("write to john dot smith at example dot com").display_text == "Write to [email].");
  redaction_rules rules;
  rules.words = {"project falcon", "acme"};
  const auto r = run("the project falcon launch for acme", true, rules);
  CHECK(r.display_text == "The [word] launch for [word].");
  CHECK(r.lexical_text == "the [word] launch for [word]");
  REQUIRE(r.redactions.size() == 2);
  CHECK(r.redactions[0].start_ms == 100);
  CHECK(r.redactions[0].end_ms == 280);
}

TEST_CASE("redaction: a partial masks a number still being read, the same words as a final do not") {
  const auto partial = run("my number is four one one one one", false);
  CHECK(partial.display_text == "My number is [card]");
  CHECK(partial.lexical_text == "my number is [card]");
  CHECK(run("my number is four one one one one", true).display_text == "My number is 41111.");
}

TEST_CASE("redaction: in a partial the first digits after a card context word are masked, in a final two are not") {
  // A partial seen under ASan: the number had just begun, and a word was still misheard after it.
  const auto partial = run("my card number is four one on", false);
  CHECK(partial.display_text.find("41") == std::string::npos);
  CHECK(partial.lexical_text.find("four one") == std::string::npos);
  CHECK(run("my card number is four one on", true).display_text.find("41") != std::string::npos);
}

TEST_CASE("redaction: a partial that ends in a card context, a digit word and double masks both words") {
  // A partial seen under ASan in the synthesized-speech test (the card read "four double one ...").
  const auto partial = run("my card number is four double", false);
  CHECK(partial.lexical_text.find("four") == std::string::npos);
  CHECK(partial.lexical_text.find("double") == std::string::npos);
  CHECK(partial.display_text.find('4') == std::string::npos);
  CHECK(partial.lexical_text.find("my card number is") == 0);  // the context words stay
}

TEST_CASE("redaction: off means nothing is masked, single kinds can be turned off") {
  redaction_rules off;
  off.enabled = false;
  CHECK(run("it is " + visa_by_digit, true, off).display_text == "It is 4111 1111 1111 1111.");
  redaction_rules no_email;
  no_email.emails = false;
  CHECK(run("write to bob at example dot com", true, no_email).display_text == "Write to bob@example.com.");
}

TEST_CASE("redaction: with ITN off in the display, a card is still found and masked") {
  const postprocessor pp(shipped_grammar());
  postproc_options opt;
  opt.itn = false;
  const auto r = pp.run(timed("it is " + visa_by_digit), opt, true);
  CHECK(r.display_text == "It is [card].");
  CHECK(r.lexical_text == "it is [card]");
}

TEST_CASE("redaction: a card number broken up by a misheard word stays masked after its context word") {
  // "won" splits the digits into "4111" and "11 1111 1111 1111"-like fragments: neither passes Luhn.
  const auto r = run("card number four one one one won one one one one one one one one one one one");
  CHECK(r.display_text == "Card number [card] won [card].");
  CHECK(r.lexical_text.find("one") == std::string::npos);
}
