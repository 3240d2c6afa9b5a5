// apply_postproc on finals with alternative readings: each reading masked as the final is, and
// never less where the final masked a number.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "actors/engine_resources.hpp"
#include "actors/result_postproc.hpp"
#include "tests/actors/engine_test_util.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

// The engine's resources with post-processing by the built-in rules (no punctuation model).
std::shared_ptr<const engine_resources> with_postproc() {
  static const auto res = [] {
    auto cfg = test::base_config();
    cfg.postproc.enabled = true;
    auto r = test::resources(cfg);
    REQUIRE(r->postproc != nullptr);
    return r;
  }();
  return res;
}

// Words of `text`, 300 ms each from `start_ms`.
std::vector<word_event> timed(const std::string& text, int64_t start_ms = 0) {
  std::vector<word_event> out;
  std::istringstream in(text);
  for (std::string w; in >> w; start_ms += 300) out.push_back({w, start_ms, start_ms + 300, 0.9f});
  return out;
}

transcript_event final_with(const std::string& best, const std::vector<std::string>& others) {
  transcript_event ev;
  ev.is_final = true;
  ev.text = best;
  ev.words = timed(best);
  ev.end_ms = static_cast<int64_t>(ev.words.size()) * 300;
  ev.alternatives.push_back({best, 0.5f, timed(best), {}});
  for (const auto& o : others) ev.alternatives.push_back({o, 0.5f / static_cast<float>(others.size()), timed(o), {}});
  return ev;
}

bool has_digit_words(const std::string& text) {
  std::istringstream in(text);
  int run = 0;
  for (std::string w; in >> w;) {
    const bool digit = w == "one" || w == "two" || w == "four" || w == "six";
    run = digit ? run + 1 : 0;
    if (run >= 2) return true;
  }
  return false;
}

// 4111 1111 1111 1111 passes the Luhn check; the same with a last 2 does not. Followed by other
// words and with no context word, a digit run is masked only as a Luhn-valid card (a run at the
// very end of a final is masked from four digits on, whatever it is).
const std::string card = "four one one one one one one one one one one one one one one one thank you";
const std::string card_one_off = "four one one one one one one one one one one one one one one two thank you";

}  // namespace

TEST_SUITE("postproc") {
  TEST_CASE("alternatives: a reading one digit off a masked card number is masked too, though it fails the Luhn check") {
    const auto& res = *with_postproc();
    moe::postproc::postproc_options opt;
    opt.redact.enabled = true;
    // Control: alone (no context word, nothing carried) the one-off reading is not a card.
    {
      auto alone = final_with(card_one_off, {});
      moe::postproc::redaction_carry carry;
      apply_postproc(res, opt, alone, &carry);
      CHECK_MESSAGE(has_digit_words(alone.text), alone.text);
    }
    auto ev = final_with(card, {card_one_off, "thank you"});
    moe::postproc::redaction_carry carry;
    apply_postproc(res, opt, ev, &carry);
    REQUIRE(!ev.redactions.empty());
    CHECK(ev.redactions.front().kind == "card");
    CHECK_MESSAGE(!has_digit_words(ev.text), ev.text);
    // The masked final and the masked one-off reading now read alike: one entry, shares added.
    REQUIRE(ev.alternatives.size() == 2);
    CHECK(ev.alternatives[0].text == ev.text);
    CHECK(ev.alternatives[0].confidence == doctest::Approx(0.75f));
    CHECK(ev.alternatives[1].text == "thank you");  // said within the card's time: no digits
    for (const auto& a : ev.alternatives) {
      CHECK_MESSAGE(!has_digit_words(a.text), a.text);
      CHECK_MESSAGE(!has_digit_words(a.display_text), a.display_text);
      CHECK(a.display_text.find("4111") == std::string::npos);
    }
    // A reading that goes on past the card still has the card masked.
    auto later = final_with(card, {card + " extension six two"});
    moe::postproc::redaction_carry c2;
    apply_postproc(res, opt, later, &c2);
    REQUIRE(later.alternatives.size() == 2);
    CHECK(later.alternatives[1].text.find("[card]") != std::string::npos);
    CHECK_MESSAGE(!has_digit_words(later.alternatives[1].text.substr(0, later.alternatives[1].text.find("extension"))),
                  later.alternatives[1].text);
  }

  TEST_CASE("alternatives: a digit run a reading ends with carries to the next final as the final's own would") {
    const auto& res = *with_postproc();
    moe::postproc::postproc_options opt;
    opt.redact.enabled = true;
    // The final hears "thanks i will read it", a reading "... read four one"; the next final
    // starts with "one one": with the reading's two digits carried, the run reaches four
    // (partial_digits_min) and is masked.
    auto first = final_with("thanks i will read it", {"thanks i will read four one"});
    moe::postproc::redaction_carry carry;
    apply_postproc(res, opt, first, &carry);
    CHECK(carry.trailing_digits >= 2);
    transcript_event next;
    next.is_final = true;
    next.text = "one one okay";
    next.words = timed(next.text, 2000);
    next.start_ms = 2000;
    next.end_ms = 2900;
    apply_postproc(res, opt, next, &carry);
    CHECK_MESSAGE(next.text.rfind("one one", 0) != 0, next.text);
    // Control: without the reading, nothing is carried and "one one" stays.
    auto plain = final_with("thanks i will read it", {});
    moe::postproc::redaction_carry c2;
    apply_postproc(res, opt, plain, &c2);
    CHECK(c2.trailing_digits == 0);
    transcript_event next2 = next;
    next2.text = "one one okay";
    next2.words = timed(next2.text, 2000);
    apply_postproc(res, opt, next2, &c2);
    CHECK(next2.text.rfind("one one", 0) == 0);
  }
}
