// FunASR replies as its appending clients read them: online text goes out a stable word at a
// time and never repeats, sentences and utterances are separated by a space, the last reply
// acknowledges the end.
#include <doctest/doctest.h>

#include "net/funasr_replies.hpp"

using namespace sluice;
using namespace sluice::net;
using json = nlohmann::json;

namespace {

actors::transcript_event ev(int64_t utterance, bool final, std::string text) {
  actors::transcript_event e;
  e.utterance = utterance;
  e.is_final = final;
  e.text = std::move(text);
  return e;
}

// What FunASR's Python client prints in online / offline mode: every message's text appended.
std::string appended(funasr_replies& r, const std::vector<actors::transcript_event>& evs) {
  std::string out;
  for (const auto& e : evs)
    if (auto m = r.on_event(e)) out += (*m)["text"].get<std::string>();
  return out;
}

}  // namespace

TEST_SUITE("funasr replies") {
  TEST_CASE("online: a growing last word is held back, nothing is sent twice, utterances are spaced") {
    funasr_replies r("online", "w");
    const auto text = appended(r, {ev(0, false, "thank you for calling o"), ev(0, false, "thank you for calling northwind"),
                                   ev(0, true, "thank you for calling northwind bank"), ev(1, false, "i am"),
                                   ev(1, true, "i am sorry")});
    CHECK(text == "thank you for calling northwind bank i am sorry");
  }

  TEST_CASE("online: a word is sent once two partials agree on it, so a revision before that is not shown") {
    funasr_replies r("online", "w");
    CHECK(appended(r, {ev(0, false, "sorry to her that"), ev(0, true, "sorry to hear that")}) == "sorry to hear that");
    funasr_replies r2("online", "w");
    CHECK(appended(r2, {ev(0, false, "dollars will retur"), ev(0, false, "dollars i will refund"),
                        ev(0, true, "dollars i will refund")}) == "dollars i will refund");
  }

  TEST_CASE("online: a final that revises a word both partials agreed on keeps it (append-only clients)") {
    funasr_replies r("online", "w");
    CHECK(appended(r, {ev(0, false, "a b c d"), ev(0, false, "a b c d e"), ev(0, true, "a x c d e")}) == "a b c d e");
  }

  TEST_CASE("2pass: online words of an utterance, then its sentence - later ones start with a space") {
    funasr_replies r("2pass", "w");
    std::vector<json> out;
    for (const auto& e : {ev(0, false, "hello wor"), ev(0, false, "hello world"), ev(0, true, "hello world"),
                          ev(1, false, "bye now"), ev(1, false, "bye now x"), ev(1, true, "bye now")})
      if (auto m = r.on_event(e)) out.push_back(*m);
    REQUIRE(out.size() == 4);
    CHECK(out[0]["mode"] == "2pass-online");
    CHECK(out[0]["text"] == "hello");
    CHECK(out[1]["mode"] == "2pass-offline");
    CHECK(out[1]["text"] == "hello world");
    CHECK(out[2]["mode"] == "2pass-online");
    CHECK(out[2]["text"] == " bye now");
    CHECK(out[3]["text"] == " bye now");
    CHECK(out[3]["stamp_sents"][0]["text_seg"] == "bye now");
    const auto last = r.last();
    CHECK(last["is_final"] == true);
    CHECK(last["is_end"] == true);
    CHECK(last["text"] == "");
  }

  TEST_CASE("offline: sentences only, spaced - empty finals send nothing") {
    funasr_replies r("offline", "w");
    CHECK(appended(r, {ev(0, false, "a b"), ev(0, true, "a b c"), ev(1, true, ""), ev(2, true, "d")}) == "a b c d");
  }
}
