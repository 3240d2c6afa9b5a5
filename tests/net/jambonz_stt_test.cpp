// jambonz's custom speech-to-text API end to end, driven by an emulator of jambonz written from
// the published format (docs.jambonz.org "Adding custom speech vendors"): start, 20 ms PCM16
// frames, stop; interim and final transcriptions come back, the server closes after the last;
// the call is registered; hostile clients get an error message and a close.
#include "tests/net/switch_test_util.hpp"

#include "tests/net/honest_stream.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr std::size_t samples_per_20ms = 160;

}  // namespace

TEST_SUITE("jambonz stt") {
  TEST_CASE("jambonz STT: start, PCM16 audio, stop -> interim and final transcriptions, then the server closes") {
    served s;
    const auto ref = reference_call_finals(*s.engine, "pcm_s16le", 0, samples_per_20ms);
    std::vector<ws_message> script{ws_message::txt(
        R"({"type":"start","language":"en-US","format":"raw","encoding":"LINEAR16","sampleRateHz":8000,"interimResults":true})")};
    for (const auto& f : pcm16_frames(call_samples(0), samples_per_20ms)) script.push_back(ws_message::bin(f));
    script.push_back(ws_message::txt(R"({"type":"stop"})"));
    const auto r = ws_script(s.port, "/jambonz/stt", script, {"", {{"Authorization", "Bearer anything"}}});
    CHECK(r.close_code == 1000);
    std::vector<std::string> finals;
    int interim = 0;
    for (const auto& m : r.messages) {
      CHECK(m["type"] == "transcription");
      CHECK(m["language"] == "en-US");
      if (m["is_final"] == true) finals.push_back(m["alternatives"][0]["transcript"]);
      else ++interim;
    }
    CHECK(interim >= 2);
    CHECK_MESSAGE(finals == ref, "sent: " << joined(finals) << "\ndirect: " << joined(ref));
    const auto rec = wait_ended_call(*s.server, "jambonz_stt");
    CHECK(rec.start.channel_labels == std::vector<std::string>{"caller"});
    CHECK(rec.start.metadata["language"] == "en-US");
    CHECK(rec.end_reason == "stop");
    CHECK(record_finals(rec, 0) == ref);
  }

  TEST_CASE("jambonz STT hostile: audio before start, unknown type, other encoding: an error message and a close") {
    served s;
    const auto want = reference_call_finals(*s.engine, "pcm_s16le", 0, 800);
    honest_stream honest(s.port);
    auto error_of = [&](const std::vector<ws_message>& script, int code) {
      const auto r = ws_script(s.port, "/jambonz/stt", script);
      CHECK(r.close_code == code);
      REQUIRE_FALSE(r.messages.empty());
      CHECK(r.messages.back()["type"] == "error");
      return r.messages.back()["error"].get<std::string>();
    };
    CHECK(error_of({ws_message::bin(std::vector<uint8_t>(320, 0))}, 1008) == "binary audio before the start message");
    CHECK(error_of({ws_message::txt(R"({"type":"start"})"), ws_message::txt(R"({"type":"flush"})")}, 1008) ==
          "unknown message type \"flush\"");
    CHECK(error_of({ws_message::txt(R"({"type":"start","encoding":"OPUS"})")}, 1003) == "encoding \"OPUS\" is not LINEAR16");
    CHECK(error_of({ws_message::txt(R"({"type":5})")}, 1008) == "a message without a string \"type\"");
    const auto got = honest.finish();
    CHECK_MESSAGE(got == want, "honest: " << joined(got) << "\ndirect: " << joined(want));
  }
}
