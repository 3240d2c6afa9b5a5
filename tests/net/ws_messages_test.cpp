// The WebSocket start and end messages parsed without a server: the structs they give, and
// the errors (never exceptions) for wrong types, ranges, lengths and bytes that are not UTF-8.
#include <doctest/doctest.h>

#include <string>

#include "net/ws_messages.hpp"

using namespace sluice;
using namespace sluice::net;

TEST_SUITE("ws messages") {
  TEST_CASE("sluice start: the documented fields become the channel request") {
    auto r = parse_sluice_start(
        R"({"type":"start","sample_rate":8000,"encoding":"mulaw","channels":1,"partials":false,
            "hotwords":["acme 4",{"phrase":"refund","weight":2.5},{"phrase":"order"}],"alternatives":3})");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(r->alternatives == 3);
    CHECK(r->sample_rate == 8000);
    CHECK(r->codec == "mulaw");
    CHECK(r->partials == false);
    REQUIRE(r->hotwords.size() == 3);
    CHECK(r->hotwords[0] == "acme 4");
    CHECK(r->hotwords[1].rfind("refund 2.5", 0) == 0);
    CHECK(r->hotwords[2].rfind("order 3", 0) == 0);
    auto d = parse_sluice_start(R"({"type":"start"})");
    REQUIRE(d.has_value());
    CHECK(d->sample_rate == 16000);
    CHECK(d->codec == "pcm_s16le");
    CHECK(d->partials == true);
    CHECK(d->hotwords.empty());
    CHECK(d->alternatives == -1);  // the engine's [decoder] alternatives
    auto none = parse_sluice_start(R"({"type":"start","alternatives":0})");
    REQUIRE(none.has_value());
    CHECK(none->alternatives == 0);
  }

  TEST_CASE("sluice start: each bad field is an invalid_argument naming it") {
    const std::string many_hotwords = [] {
      std::string s = R"({"type":"start","hotwords":[)";
      for (std::size_t i = 0; i <= max_hotwords; ++i) s += std::string(i ? "," : "") + "\"w\"";
      return s + "]}";
    }();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"type":5})", "type"},
        {R"({"type":"stop"})", "start"},
        {R"({"type":"start","sample_rate":"8000"})", "sample_rate"},
        {R"({"type":"start","sample_rate":8000.5})", "sample_rate"},
        {R"({"type":"start","sample_rate":4294975296})", "sample_rate"},
        {R"({"type":"start","sample_rate":999})", "sample_rate"},
        {R"({"type":"start","encoding":"mp3"})", "encoding"},
        {R"({"type":"start","encoding":"f32"})", "f32"},
        {R"({"type":"start","encoding":["opus"]})", "encoding"},
        {R"({"type":"start","channels":2})", "channels"},
        {R"({"type":"start","channels":4294967297})", "channels"},
        {R"({"type":"start","partials":1})", "partials"},
        {R"({"type":"start","hotwords":"acme"})", "hotwords"},
        {R"({"type":"start","hotwords":[1]})", "hotwords"},
        {R"({"type":"start","hotwords":[{"phrase":"a","weight":101}]})", "weight"},
        {R"({"type":"start","hotwords":[{"phrase":"a","weight":-1}]})", "weight"},
        {R"({"type":"start","hotwords":[{"weight":1}]})", "phrase"},
        {R"({"type":"start","hotwords":[")" + std::string(max_hotword_bytes + 1, 'a') + R"("]})", "bytes"},
        {R"({"type":"start","encoding":")" + std::string(max_name_bytes + 1, 'a') + R"("})", "encoding"},
        {many_hotwords, "hotwords"},
        {R"({"type":"start","alternatives":21})", "alternatives"},
        {R"({"type":"start","alternatives":-1})", "alternatives"},
        {R"({"type":"start","alternatives":"2"})", "alternatives"},
        {R"({"type":"start","alternatives":2.5})", "alternatives"},
    };
    for (const auto& [text, about] : cases) {
      CAPTURE(text);
      auto r = parse_sluice_start(text);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::invalid_argument);
      CHECK_MESSAGE(r.error().message.find(about) != std::string::npos, r.error().message);
    }
  }

  TEST_CASE("sluice start: text that is not a JSON object, or not UTF-8, is errc::corrupt") {
    for (const std::string text : {std::string("{not json"), std::string("[1]"), std::string("\"start\""), std::string(),
                                   std::string("{\"type\":\"start\",\"hotwords\":[\"\xFF\"]}")}) {
      CAPTURE(text);
      auto r = parse_sluice_start(text);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::corrupt);
    }
  }

  TEST_CASE("FunASR start: fields, hotwords as a JSON object string or a list, is_speaking") {
    auto r = parse_funasr_start(
        R"({"mode":"offline","wav_name":"call 7","audio_fs":8000,"wav_format":"PCM","is_speaking":false,
            "hotwords":"{\"refund\":20,\"acme\":5}","chunk_size":[5,10,5],"itn":true})");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(r->mode == "offline");
    CHECK(r->wav_name == "call 7");
    CHECK(r->request.sample_rate == 8000);
    CHECK(r->request.codec == "pcm_s16le");
    CHECK(r->request.partials == false);
    CHECK(r->end_requested);
    REQUIRE(r->request.hotwords.size() == 2);
    CHECK(r->request.hotwords[0].rfind("acme 0.5", 0) == 0);  // object keys come sorted
    CHECK(r->request.hotwords[1].rfind("refund 2", 0) == 0);
    auto list = parse_funasr_start(R"({"hotwords":"acme, refund\norder"})");
    REQUIRE(list.has_value());
    CHECK(list->mode == "2pass");
    CHECK(list->request.partials);
    CHECK_FALSE(list->end_requested);
    CHECK(list->request.hotwords == std::vector<std::string>{"acme", "refund", "order"});
    CHECK(list->itn);  // FunASR's default
  }

  TEST_CASE("FunASR start: the hotword forms of the current clients, itn kept, is_finished ends") {
    // The 2026 Python client's file mode: first words of the hotword file joined by commas.
    auto comma = parse_funasr_start(R"({"hotwords":"acme,refund desk","itn":false})");
    REQUIRE_MESSAGE(comma.has_value(), comma.error().message);
    CHECK(comma->request.hotwords == std::vector<std::string>{"acme", "refund desk"});
    CHECK_FALSE(comma->itn);
    // Its microphone mode and the C++ clients pass a plain string: space-separated words.
    auto spaced = parse_funasr_start(R"({"hotwords":"acme  refund\torder"})");
    REQUIRE_MESSAGE(spaced.has_value(), spaced.error().message);
    CHECK(spaced->request.hotwords == std::vector<std::string>{"acme", "refund", "order"});
    // Browser client, file mode: upper-case wav_format.
    auto browser = parse_funasr_start(R"({"wav_format":"Pcm","is_finished":true})");
    REQUIRE_MESSAGE(browser.has_value(), browser.error().message);
    CHECK(browser->end_requested);
    auto bad_itn = parse_funasr_start(R"({"itn":"yes"})");
    REQUIRE_FALSE(bad_itn.has_value());
    CHECK(bad_itn.error().message.find("itn") != std::string::npos);
  }

  TEST_CASE("FunASR start: each bad field is an invalid_argument naming it") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"mode":"fast"})", "mode"},
        {R"({"mode":1})", "mode"},
        {R"({"audio_fs":"16000"})", "audio_fs"},
        {R"({"audio_fs":16000.5})", "audio_fs"},
        {R"({"audio_fs":4294983296})", "audio_fs"},
        {R"({"wav_format":"mp3"})", "wav_format"},
        {R"({"wav_name":5})", "wav_name"},
        {R"({"wav_name":")" + std::string(max_name_bytes + 1, 'n') + R"("})", "wav_name"},
        {R"({"hotwords":["acme"]})", "hotwords"},
        {R"({"hotwords":"{\"acme\":\"high\"}"})", "hotwords"},
        {R"({"hotwords":"{\"acme\":1e9}"})", "hotwords"},
        {R"({"is_speaking":"false"})", "is_speaking"},
    };
    for (const auto& [text, about] : cases) {
      CAPTURE(text);
      auto r = parse_funasr_start(text);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::invalid_argument);
      CHECK_MESSAGE(r.error().message.find(about) != std::string::npos, r.error().message);
    }
  }

  TEST_CASE("end messages: only {\"type\":\"end\"} / {\"is_speaking\":false} or {\"is_finished\":true}, anything else is an error") {
    CHECK(parse_sluice_end(R"({"type":"end"})").has_value());
    for (const char* text : {R"({"type":5})", R"({"type":null})", R"({"type":"pause"})", R"({})"})
      CHECK(parse_sluice_end(text).error().code == errc::invalid_argument);
    CHECK(parse_sluice_end("nope").error().code == errc::corrupt);
    CHECK(parse_funasr_end(R"({"is_speaking":false})").has_value());
    CHECK(parse_funasr_end(R"({"is_speaking":false,"is_end":true})").has_value());  // 2026 Python client
    CHECK(parse_funasr_end(R"({"is_finished":true})").has_value());                 // FunASR's C++ server takes it
    for (const char* text : {R"({"is_speaking":true})", R"({"is_speaking":"no"})", R"({"is_speaking":0})", R"({})",
                             R"({"is_finished":false})", R"({"is_finished":"yes"})"})
      CHECK(parse_funasr_end(text).error().code == errc::invalid_argument);
  }
}
