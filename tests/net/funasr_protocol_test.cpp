// The FunASR runtime protocol as the current (2026) clients speak it: the end-of-input
// acknowledgement, {"is_finished": true}, case-insensitive wav_format, every hotword form,
// and its hostile inputs with an honest stream alongside.
#include "tests/net/honest_stream.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

const std::string start_2pass =
    R"({"mode":"2pass","wav_name":"call","wav_format":"pcm","is_speaking":true,"chunk_size":[5,10,5],"audio_fs":8000,"hotwords":"refund,order","itn":true})";

// The 2026 Python client's check: the reply that acknowledges the end carries both is_end and
// is_final, and comes after every sentence.
void expect_acknowledged(const ws_result& r) {
  CHECK(r.close_code == 1000);
  REQUIRE_FALSE(r.messages.empty());
  const auto& last = r.messages.back();
  CHECK(last.value("is_end", false));
  CHECK(last.value("is_final", false));
  CHECK(last.contains("text"));
  for (std::size_t i = 0; i + 1 < r.messages.size(); ++i) {
    CHECK_FALSE(r.messages[i].value("is_end", false));
    CHECK(r.messages[i].contains("text"));  // every FunASR client reads "text"
  }
}

std::string offline_text(const ws_result& r) {
  std::string out;
  for (const auto& m : r.messages)
    if ((m.value("mode", std::string()) == "2pass-offline" || m.value("mode", std::string()) == "offline") &&
        !m.value("is_end", false))
      out += m.value("text", std::string()) + "|";
  return out;
}

}  // namespace

TEST_SUITE("funasr protocol") {
  TEST_CASE("the 2026 end {is_speaking:false,is_end:true} gets every sentence, then one is_end+is_final reply") {
    served s;
    auto r = ws_session(s.port, "/funasr", {start_2pass}, call_pcm16_frames(), {R"({"is_speaking":false,"is_end":true})"});
    expect_acknowledged(r);
    CHECK(offline_text(r).size() > 10);
  }

  TEST_CASE("{is_finished:true} ends like is_speaking false - upper-case wav_format and spaced hotwords are taken") {
    served s;
    const auto frames = call_pcm16_frames();
    auto plain = ws_session(s.port, "/funasr", {start_2pass}, frames, {R"({"is_speaking":false})"});
    expect_acknowledged(plain);
    auto finished = ws_session(
        s.port, "/funasr",
        {R"({"mode":"2pass","wav_name":"call","wav_format":"PCM","audio_fs":8000,"hotwords":"refund order"})"}, frames,
        {R"({"is_finished":true})"});
    expect_acknowledged(finished);
    // The same audio: the same sentences (hotwords of equal default weight in both).
    CHECK(offline_text(finished) == offline_text(plain));
  }

  TEST_CASE("online mode: the appended online text has exactly the words of the sentences (none sent twice)") {
    // Regression: online deltas used to resend a whole partial whenever its last word grew
    // ("thank you for calling o" then "thank you for calling northwind"), and FunASR's clients
    // append every online message.
    served s;
    const auto frames = call_pcm16_frames();
    auto offline = ws_session(s.port, "/funasr", {R"({"mode":"offline","audio_fs":8000,"itn":false})"}, frames,
                              {R"({"is_speaking":false,"is_end":true})"});
    auto online = ws_session(s.port, "/funasr", {R"({"mode":"online","audio_fs":8000})"}, frames,
                             {R"({"is_speaking":false,"is_end":true})"});
    expect_acknowledged(online);
    auto word_count = [](const ws_result& r) {
      std::string all;
      for (const auto& m : r.messages) all += m.value("text", std::string());
      std::size_t n = 0;
      bool in_word = false;
      for (char c : all) {
        if (c != ' ' && !in_word) ++n;
        in_word = c != ' ';
      }
      return n;
    };
    CHECK(word_count(offline) > 20);
    CHECK(word_count(online) == word_count(offline));
  }

  TEST_CASE("hostile FunASR input gets a clear error with text and is_final false - an honest stream is unaffected") {
    served s;
    const auto ref = reference_finals(s.port);
    honest_stream h(s.port);
    struct bad_case {
      std::vector<std::string> texts;
      std::vector<std::vector<uint8_t>> frames;
      std::string code;
      int close;
    };
    const std::vector<bad_case> cases = {
        {{}, {{1, 2, 3, 4}}, "protocol", 1008},                                  // audio before the start
        {{"{nope"}, {}, "bad_json", 1008},                                       // not JSON
        {{R"({"mode":"2pass","audio_fs":"8000"})"}, {}, "bad_request", 1003},    // wrong type
        {{R"({"mode":"2pass","wav_format":"mp3"})"}, {}, "bad_request", 1003},   // not PCM
        {{start_2pass, R"({"is_speaking":"no"})"}, {}, "protocol", 1008},       // wrong type later
        {{start_2pass, R"({"pause":true})"}, {}, "protocol", 1008},             // unknown message
        {{start_2pass, "[1,2]"}, {}, "bad_json", 1008},                         // not an object
    };
    for (const auto& c : cases) {
      CAPTURE(c.code);
      auto r = ws_session(s.port, "/funasr", c.texts, c.frames, {});
      REQUIRE_FALSE(r.messages.empty());
      const auto& m = r.messages.back();
      CHECK(m.value("code", std::string()) == c.code);
      CHECK_FALSE(m.value("reason", std::string()).empty());
      CHECK(m.value("text", std::string("absent")) == "");
      CHECK(m.value("is_final", true) == false);
      CHECK(r.close_code == c.close);
    }
    CHECK(h.finish() == ref);
  }
}
