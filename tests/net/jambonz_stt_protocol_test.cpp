// jambonz's custom speech-to-text API as a pure state machine: start/stop, interim results only
// when asked for, transcription replies, and each kind of bad message.
#include "tests/net/switch_protocol_util.hpp"

#include "net/switches/jambonz_stt_protocol.hpp"

using namespace sluice;
using namespace sluice::test;
using namespace sluice::net::switches;

TEST_SUITE("jambonz stt protocol") {
  TEST_CASE("jambonz STT: start opens one PCM16 channel, interim results only when asked, stop ends") {
    jambonz_stt_protocol p;
    auto s = p.on_text(R"({"type":"start","language":"en-US","format":"raw","encoding":"LINEAR16","sampleRateHz":16000,"interimResults":true})");
    REQUIRE(s.open.has_value());
    CHECK(s.open->start.source == "jambonz_stt");
    CHECK(s.open->sample_rate == 16000);
    CHECK(s.open->codec == "pcm_s16le");
    auto a = p.on_binary(std::vector<uint8_t>{1, 0, 2, 0});
    REQUIRE(a.audio.size() == 1);
    auto partial = final_event("hel");
    partial.is_final = false;
    const auto interim = p.on_result(0, partial);
    REQUIRE(interim.size() == 1);
    CHECK(parsed(interim[0])["is_final"] == false);
    const auto fin = p.on_result(0, final_event("hello there"));
    REQUIRE(fin.size() == 1);
    const auto r = parsed(fin[0]);
    CHECK(r["type"] == "transcription");
    CHECK(r["is_final"] == true);
    CHECK(r["language"] == "en-US");
    CHECK(r["alternatives"][0]["transcript"] == "hello there");
    CHECK(r["alternatives"][0]["confidence"].get<double>() == doctest::Approx(0.75));
    CHECK(p.on_text(R"({"type":"stop"})").end == "stop");
    CHECK(p.on_binary(std::vector<uint8_t>{1, 0}).audio.empty());  // after stop: ignored

    jambonz_stt_protocol quiet;
    REQUIRE(quiet.on_text(R"({"type":"start","language":"en-US","interimResults":false})").open);
    CHECK(quiet.on_result(0, partial).empty());
  }

  TEST_CASE("jambonz STT hostile: audio first, stop first, other encodings, bad rate, unknown type, second start") {
    auto a = jambonz_stt_protocol().on_binary(std::vector<uint8_t>{1});
    CHECK(error_reason(a) == "binary audio before the start message");
    CHECK(parsed(a.error->reply)["type"] == "error");
    CHECK(parsed(a.error->reply)["error"] == "binary audio before the start message");
    CHECK(error_reason(jambonz_stt_protocol().on_text(R"({"type":"stop"})")) == "\"stop\" before start");
    CHECK(jambonz_stt_protocol().on_text(R"({"type":"start","encoding":"MULAW"})").error->code == close_code::unsupported);
    CHECK(jambonz_stt_protocol().on_text(R"({"type":"start","format":"wav"})").error->code == close_code::unsupported);
    CHECK(error_reason(jambonz_stt_protocol().on_text(R"({"type":"start","sampleRateHz":4000})")).find("[8000, 48000]") !=
          std::string::npos);
    jambonz_stt_protocol p;
    REQUIRE(p.on_text(R"({"type":"start"})").open);
    CHECK(error_reason(p.on_text(R"({"type":"pause"})")) == "unknown message type \"pause\"");
    CHECK(error_reason(p.on_text(R"({"type":"start"})")) == "a second start");
  }
}
