// Genesys AudioHook end to end, driven by an emulator of Genesys Cloud written from the
// published protocol (purecloudlabs/audiohook-reference-implementation): headers with the API
// key, open offering stereo PCMU, ping, update, paused/resumed, stereo PCMU audio (customer
// external ch0, agent internal ch1), close; transcripts come back as event messages, closed
// last; the call is registered; hostile clients get a disconnect and a close.
#include "tests/net/switch_test_util.hpp"

#include "tests/net/honest_stream.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr std::size_t bytes_per_20ms = 160;
const std::string session = "9b2e8c1a-7d44-4f0e-a1b2-c3d4e5f60718";

std::string msg(int seq, const std::string& type, const std::string& params = "{}") {
  return R"({"version":"2","id":")" + session + R"(","type":")" + type + R"(","seq":)" + std::to_string(seq) +
         R"(,"serverseq":0,"position":"PT0.0S","parameters":)" + params + "}";
}

const std::string open_params = R"({"organizationId":"d7934305-0972-4844-938e-9060eef73d05","conversationId":"090eaa2f-72fa-480a-83e0-8667ff89c0ec","participant":{"id":"883efee8-3d6c-4537-b500-6d7ca4b92fa0","ani":"+1-555-555-1234","aniName":"John Doe","dnis":"+1-800-555-6789"},"media":[{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000},{"type":"audio","format":"PCMU","channels":["external"],"rate":8000}],"language":"en-US"})";

// The bundled call as AudioHook sends stereo PCMU: external and internal bytes interleaved, 20 ms per frame.
std::vector<std::vector<uint8_t>> stereo_pcmu() {
  const auto a = call_mulaw(0), b = call_mulaw(1);
  std::vector<uint8_t> both;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) both.insert(both.end(), {a[i], b[i]});
  return byte_frames(both, 2 * bytes_per_20ms);
}

std::vector<std::string> event_finals(const ws_result& r, const std::string& channel) {
  std::vector<std::string> out;
  for (const auto& m : r.messages)
    if (m.is_object() && m.value("type", "") == "event")
      for (const auto& e : m["parameters"]["entities"])
        if (e["type"] == "transcript" && e["data"]["channel"] == channel)
          out.push_back(e["data"]["alternatives"][0]["interpretations"][0]["transcript"]);
  return out;
}

ws_client_options genesys_headers(const std::string& key) {
  return {"",
          {{"Audiohook-Organization-Id", "d7934305-0972-4844-938e-9060eef73d05"},
           {"Audiohook-Correlation-Id", "30b0e395-84d3-4570-ac13-9a62d8f514c0"},
           {"Audiohook-Session-Id", session},
           {"X-API-KEY", key}}};
}

}  // namespace

TEST_SUITE("audiohook") {
  TEST_CASE("AudioHook: opened, pong, updated, transcripts of customer and agent as events, closed, the call registered") {
    served s;
    const auto ref0 = reference_call_finals(*s.engine, "mulaw", 0, bytes_per_20ms);
    const auto ref1 = reference_call_finals(*s.engine, "mulaw", 1, bytes_per_20ms);
    int seq = 0;
    std::vector<ws_message> script{ws_message::txt(msg(++seq, "open", open_params))};
    const auto frames = stereo_pcmu();
    for (std::size_t i = 0; i < frames.size(); ++i) {
      script.push_back(ws_message::bin(frames[i]));
      if (i == 200) script.push_back(ws_message::txt(msg(++seq, "ping", R"({"rtt":"PT0.04S"})")));
      if (i == 400) script.push_back(ws_message::txt(msg(++seq, "update", R"({"language":"en-GB"})")));
      if (i == 600) script.push_back(ws_message::txt(msg(++seq, "paused")));
      if (i == 601) script.push_back(ws_message::txt(msg(++seq, "resumed", R"({"start":"PT12.0S","discarded":"PT0.0S"})")));
    }
    script.push_back(ws_message::txt(msg(++seq, "close", R"({"reason":"end"})")));
    const auto r = ws_script(s.port, "/audiohook", script, genesys_headers(""));
    CHECK(r.close_code == 1000);
    REQUIRE(r.messages.size() >= 4);
    CHECK(r.messages.front()["type"] == "opened");
    CHECK(r.messages.front()["parameters"]["media"][0]["channels"] == json::array({"external", "internal"}));
    CHECK(r.messages.back()["type"] == "closed");
    CHECK(r.messages.back()["clientseq"] == seq);
    int pongs = 0, updated = 0;
    int64_t last_seq = 0;
    for (const auto& m : r.messages) {
      CHECK(m["id"] == session);
      CHECK(m["seq"].get<int64_t>() == last_seq + 1);  // the server's seq counts up from 1
      last_seq = m["seq"].get<int64_t>();
      pongs += m["type"] == "pong";
      updated += m["type"] == "updated";
    }
    CHECK(pongs == 1);
    CHECK(updated == 1);
    CHECK_MESSAGE(event_finals(r, "external") == ref0, "sent: " << joined(event_finals(r, "external")) << "\ndirect: " << joined(ref0));
    CHECK_MESSAGE(event_finals(r, "internal") == ref1, "sent: " << joined(event_finals(r, "internal")) << "\ndirect: " << joined(ref1));

    const auto rec = wait_ended_call(*s.server, "audiohook");
    CHECK(rec.start.external_id == "090eaa2f-72fa-480a-83e0-8667ff89c0ec");
    CHECK(rec.start.channel_labels == std::vector<std::string>{"customer", "agent"});
    CHECK(rec.start.metadata["participant"]["aniName"] == "John Doe");
    CHECK(rec.start.metadata["language"] == "en-GB");  // merged from the update
    CHECK(rec.end_reason == "close (end)");
    REQUIRE(rec.events.size() == 2);
    CHECK(rec.events[0].type == "paused");
    CHECK(rec.events[1].type == "resumed");
    CHECK(record_finals(rec, 0) == ref0);
    CHECK(record_finals(rec, 1) == ref1);
  }

  TEST_CASE("AudioHook hostile: not JSON, wrong version, seq out of order, audio first, message before open, unknown type") {
    served s;
    const auto want = reference_call_finals(*s.engine, "pcm_s16le", 0, 800);
    honest_stream honest(s.port);
    auto disconnect_info = [&](const std::vector<ws_message>& script) {
      const auto r = ws_script(s.port, "/audiohook", script, genesys_headers(""));
      CHECK(r.close_code == 1008);
      REQUIRE_FALSE(r.messages.empty());
      const auto& d = r.messages.back();
      CHECK(d["type"] == "disconnect");
      CHECK(d["parameters"]["reason"] == "error");
      return d["parameters"]["info"].get<std::string>();
    };
    CHECK(disconnect_info({ws_message::bin(std::vector<uint8_t>(320, 0xff))}) == "audio before opened");
    CHECK(disconnect_info({ws_message::txt(R"({"version":"1","id":"x","type":"open","seq":1})")}) == "version must be \"2\"");
    CHECK(disconnect_info({ws_message::txt(msg(1, "open", open_params)), ws_message::txt(msg(3, "ping"))}) ==
          "seq 3 where 2 was due");
    CHECK(disconnect_info({ws_message::txt(msg(1, "open", open_params)), ws_message::txt(msg(2, "rewind"))}) ==
          "unknown message type \"rewind\"");
    CHECK(disconnect_info({ws_message::txt(msg(1, "ping"))}) == "\"ping\" before open");
    CHECK(disconnect_info({ws_message::txt(R"({"version":"2","type":"open","seq":1,"id":)")}) == "the text frame is not JSON");
    const auto got = honest.finish();
    CHECK_MESSAGE(got == want, "honest: " << joined(got) << "\ndirect: " << joined(want));
  }
}
