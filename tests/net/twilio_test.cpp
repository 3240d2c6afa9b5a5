// Twilio Media Streams end to end, driven by an emulator of Twilio written from the published
// format (Twilio's "Media Streams - WebSocket Messages"): connected, start with both tracks,
// media every 20 ms per track as base64 μ-law, a dtmf, a mark, stop; both channels transcribed
// and kept with the call; and each hostile input refused while an honest stream goes on.
#include "tests/net/switch_test_util.hpp"

#include "net/switches/twilio_protocol.hpp"
#include "tests/net/honest_stream.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr std::size_t bytes_per_20ms = 160;

std::string media(const char* track, int chunk, const std::vector<uint8_t>& payload) {
  return json{{"event", "media"},
              {"sequenceNumber", std::to_string(chunk + 2)},
              {"streamSid", "MZ9"},
              {"media",
               {{"track", track},
                {"chunk", std::to_string(chunk)},
                {"timestamp", std::to_string(chunk * 20)},
                {"payload", net::switches::encode_base64(payload)}}}}
      .dump();
}

const std::string start_msg = R"({"event":"start","sequenceNumber":"1","streamSid":"MZ9","start":{"accountSid":"AC9","streamSid":"MZ9","callSid":"CA9","tracks":["inbound","outbound"],"customParameters":{"queue":"billing"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}})";

}  // namespace

TEST_SUITE("twilio") {
  TEST_CASE("Twilio Media Streams: inbound and outbound tracks become the caller and callee channels of one call") {
    served s;
    const auto ref0 = reference_call_finals(*s.engine, "mulaw", 0, bytes_per_20ms);
    const auto ref1 = reference_call_finals(*s.engine, "mulaw", 1, bytes_per_20ms);
    const auto in = byte_frames(call_mulaw(0), bytes_per_20ms), out = byte_frames(call_mulaw(1), bytes_per_20ms);
    std::vector<ws_message> script{ws_message::txt(R"({"event":"connected","protocol":"Call","version":"1.0.0"})"),
                                   ws_message::txt(start_msg)};
    for (std::size_t i = 0; i < std::max(in.size(), out.size()); ++i) {
      if (i < in.size()) script.push_back(ws_message::txt(media("inbound", static_cast<int>(i), in[i])));
      if (i < out.size()) script.push_back(ws_message::txt(media("outbound", static_cast<int>(i), out[i])));
      if (i == 100)
        script.push_back(ws_message::txt(R"({"event":"dtmf","streamSid":"MZ9","sequenceNumber":"x","dtmf":{"track":"inbound_track","digit":"1"}})"));
    }
    script.push_back(ws_message::txt(R"({"event":"mark","streamSid":"MZ9","sequenceNumber":"y","mark":{"name":"m1"}})"));
    script.push_back(ws_message::txt(R"({"event":"stop","sequenceNumber":"z","streamSid":"MZ9","stop":{"accountSid":"AC9","callSid":"CA9"}})"));
    const auto r = ws_script(s.port, "/twilio", script);
    CHECK(r.close_code == 1000);
    CHECK(r.messages.empty());  // Twilio takes no transcripts on its socket

    const auto rec = wait_ended_call(*s.server, "twilio");
    CHECK(rec.start.external_id == "CA9");
    CHECK(rec.start.channel_labels == std::vector<std::string>{"caller", "callee"});
    CHECK(rec.start.metadata["customParameters"]["queue"] == "billing");
    CHECK(rec.start.metadata["streamSid"] == "MZ9");
    CHECK(rec.end_reason == "stop");
    REQUIRE(rec.events.size() == 2);
    CHECK(rec.events[0].type == "dtmf");
    CHECK(rec.events[0].data["digit"] == "1");
    CHECK(rec.events[1].type == "mark");
    CHECK_MESSAGE(record_finals(rec, 0) == ref0, "call: " << joined(record_finals(rec, 0)) << "\ndirect: " << joined(ref0));
    CHECK_MESSAGE(record_finals(rec, 1) == ref1, "call: " << joined(record_finals(rec, 1)) << "\ndirect: " << joined(ref1));
  }

  TEST_CASE("Twilio hostile: binary, unknown event, media before start, bad base64, other format: closed with the reason") {
    served s;
    const auto want = reference_call_finals(*s.engine, "pcm_s16le", 0, 800);
    honest_stream honest(s.port);
    auto reason_of = [&](const std::vector<ws_message>& script) {
      asio::io_context ioc;
      websocket::stream<tcp::socket> ws(ioc);
      ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
      ws.handshake("127.0.0.1", "/twilio");
      beast::error_code ec;
      for (const auto& m : script) {
        ws.text(m.text);
        ws.write(asio::buffer(m.payload), ec);
      }
      beast::flat_buffer b;
      ws.read(b, ec);
      CHECK(ec == websocket::error::closed);
      return std::make_pair(static_cast<int>(ws.reason().code), std::string(ws.reason().reason.c_str()));
    };
    const std::vector<uint8_t> bytes(160, 0x7f);
    auto r = reason_of({ws_message::bin(bytes)});
    CHECK(r.first == 1003);
    CHECK(r.second.find("JSON text frames only") != std::string::npos);
    r = reason_of({ws_message::txt(R"({"event":"hello"})")});
    CHECK(r.first == 1008);
    CHECK(r.second == "\"hello\" before start");
    r = reason_of({ws_message::txt(start_msg), ws_message::txt(R"({"event":"hello","streamSid":"MZ9"})")});
    CHECK(r.second == "unknown event \"hello\"");
    r = reason_of({ws_message::txt(media("inbound", 0, bytes))});
    CHECK(r.second == "\"media\" before start");
    r = reason_of({ws_message::txt(start_msg), ws_message::txt(R"({"event":"media","streamSid":"MZ9","media":{"track":"inbound","payload":"%%%"}})")});
    CHECK(r.second == "the media payload is not base64");
    r = reason_of({ws_message::txt(R"({"event":"start","streamSid":"M","start":{"mediaFormat":{"encoding":"audio/l16","sampleRate":16000,"channels":1}}})")});
    CHECK(r.first == 1003);
    r = reason_of({ws_message::txt(R"({"event":"start","streamSid":)")});  // truncated JSON
    CHECK(r.second == "the text frame is not JSON");
    const auto got = honest.finish();
    CHECK_MESSAGE(got == want, "honest: " << joined(got) << "\ndirect: " << joined(want));
  }
}
