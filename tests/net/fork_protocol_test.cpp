// mod_audio_fork and jambonz `listen` as a pure state machine: metadata, mix types, stereo split
// across frames, the zero-length end frame, DTMF text frames, transcription replies, errors.
#include "tests/net/switch_protocol_util.hpp"

#include "net/switches/fork_protocol.hpp"

using namespace sluice;
using namespace sluice::test;
using namespace sluice::net::switches;

TEST_SUITE("fork protocol") {
  TEST_CASE("jambonz listen: stereo metadata opens caller and callee channels, frames split across messages") {
    fork_protocol p(fork_flavour::jambonz, {});
    auto s = p.on_text(R"({"callSid":"c-1","from":"+1555","sampleRate":16000,"mixType":"stereo"})");
    REQUIRE(s.open.has_value());
    CHECK(s.open->start.source == "jambonz");
    CHECK(s.open->start.external_id == "c-1");
    CHECK(s.open->start.channel_labels == std::vector<std::string>{"caller", "callee"});
    CHECK(s.open->sample_rate == 16000);
    CHECK(s.open->codec == "pcm_s16le");
    CHECK(s.open->start.metadata["from"] == "+1555");
    // Samples L0 R0 L1 | R1: the second message completes the frame begun by the first.
    const std::vector<uint8_t> a{0x01, 0x00, 0x02, 0x00, 0x03, 0x00}, b{0x04, 0x00};
    auto first = p.on_binary(a);
    REQUIRE(first.audio.size() == 2);
    CHECK(first.audio[0].channel == 0);
    CHECK(first.audio[0].bytes == std::vector<uint8_t>{0x01, 0x00});
    CHECK(first.audio[1].bytes == std::vector<uint8_t>{0x02, 0x00});
    auto second = p.on_binary(b);
    REQUIRE(second.audio.size() == 2);
    CHECK(second.audio[0].bytes == std::vector<uint8_t>{0x03, 0x00});
    CHECK(second.audio[1].bytes == std::vector<uint8_t>{0x04, 0x00});
    auto end = p.on_binary({});
    CHECK(end.end == "end of stream");
    CHECK(p.on_binary(a).audio.empty());  // after the end: ignored
  }

  TEST_CASE("mod_audio_fork: free-text metadata, mix type and rate from the URL defaults, mono and mixed labels") {
    fork_protocol p(fork_flavour::audio_fork, {16000, "mixed"});
    auto s = p.on_text("caller 42 on line 3");
    REQUIRE(s.open.has_value());
    CHECK(s.open->start.source == "audio_fork");
    CHECK(s.open->start.channel_labels == std::vector<std::string>{"mixed"});
    CHECK(s.open->sample_rate == 16000);
    CHECK(s.open->start.metadata["text"] == "caller 42 on line 3");
    const std::vector<uint8_t> odd{1, 2, 3};
    auto a = p.on_binary(odd);
    REQUIRE(a.audio.size() == 1);
    CHECK(a.audio[0].bytes == odd);  // mono: passed as is (the channel takes PCM in any split)
    fork_protocol mono(fork_flavour::audio_fork, {});
    CHECK(mono.on_text(R"({"uuid":"u-9"})").open->start.channel_labels == std::vector<std::string>{"caller"});
  }

  TEST_CASE("fork: DTMF and other text frames become call events, results become transcription messages") {
    fork_protocol p(fork_flavour::jambonz, {});
    REQUIRE(p.on_text(R"({"callSid":"c","mixType":"stereo"})").open);
    auto d = p.on_text(R"({"event":"dtmf","dtmf":"7","duration":"160"})");
    REQUIRE(d.events.size() == 1);
    CHECK(d.events[0].type == "dtmf");
    CHECK(d.events[0].data["digit"] == "7");
    auto t = p.on_text(R"({"note":"hold"})");
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].type == "text");
    CHECK(t.events[0].data["note"] == "hold");
    const auto replies = p.on_result(1, final_event("hello there", 3));
    REQUIRE(replies.size() == 1);
    const auto r = parsed(replies[0]);
    CHECK(r["type"] == "transcription");
    CHECK(r["data"]["label"] == "callee");
    CHECK(r["data"]["channel"] == 1);
    CHECK(r["data"]["is_final"] == true);
    CHECK(r["data"]["utterance"] == 3);
    CHECK(r["data"]["text"] == "hello there");
    CHECK(r["data"]["words"].size() == 2);
  }

  TEST_CASE("fork hostile: binary first, non-JSON jambonz metadata, bad rate or mix type: an error message and a close") {
    fork_protocol a(fork_flavour::jambonz, {});
    auto s = a.on_binary(std::vector<uint8_t>{1, 2});
    CHECK(error_reason(s) == "binary audio before the metadata text frame");
    CHECK(s.error->code == close_code::policy);
    CHECK(parsed(s.error->reply)["type"] == "error");
    fork_protocol b(fork_flavour::jambonz, {});
    CHECK(error_reason(b.on_text("not json")).find("not JSON") != std::string::npos);
    fork_protocol c(fork_flavour::jambonz, {});
    CHECK(error_reason(c.on_text(R"({"sampleRate":11025})")).find("11025 is not supported") != std::string::npos);
    fork_protocol d(fork_flavour::jambonz, {});
    CHECK(error_reason(d.on_text(R"({"sampleRate":"fast"})")).find("whole number") != std::string::npos);
    fork_protocol e(fork_flavour::audio_fork, {});
    CHECK(error_reason(e.on_text(R"({"mixType":"quad"})")).find("\"quad\" is not mono, mixed or stereo") !=
          std::string::npos);
    fork_protocol f(fork_flavour::audio_fork, {});
    CHECK(error_reason(f.on_text(R"({"mixType":3})")) == "mixType must be a string");
  }
}
