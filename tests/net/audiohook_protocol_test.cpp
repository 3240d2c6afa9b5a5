// Genesys AudioHook (version 2) as a pure state machine: open/opened with the stereo PCMU
// offer chosen, ping/pong, update/updated, paused/resumed as events, close -> closed, transcripts
// as event messages, sequence numbers both ways, and each kind of bad message.
#include "tests/net/switch_protocol_util.hpp"

#include <regex>

#include "net/switches/audiohook_protocol.hpp"

using namespace sluice;
using namespace sluice::test;
using namespace sluice::net::switches;

namespace {

const std::string session = "e160e428-53e2-487c-977d-96989bf5c99d";

std::string msg(int seq, const std::string& type, const std::string& params = "{}") {
  return R"({"version":"2","id":")" + session + R"(","type":")" + type + R"(","seq":)" + std::to_string(seq) +
         R"(,"serverseq":0,"position":"PT0.0S","parameters":)" + params + "}";
}

const std::string open_params = R"({"organizationId":"o-1","conversationId":"conv-1","participant":{"id":"p","ani":"+1555","aniName":"","dnis":"+1800"},"media":[{"type":"audio","format":"PCMU","channels":["external"],"rate":8000},{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000}],"language":"en-US"})";

}  // namespace

TEST_SUITE("audiohook protocol") {
  TEST_CASE("AudioHook: open chooses stereo PCMU (customer=external ch0, agent=internal ch1), the session's replies") {
    audiohook_protocol p(session);
    auto o = p.on_text(msg(1, "open", open_params));
    REQUIRE(o.open.has_value());
    CHECK(o.open->start.source == "audiohook");
    CHECK(o.open->start.external_id == "conv-1");
    CHECK(o.open->start.channel_labels == std::vector<std::string>{"customer", "agent"});
    CHECK(o.open->codec == "mulaw");
    CHECK(o.open->start.metadata["participant"]["ani"] == "+1555");
    REQUIRE(o.replies.size() == 1);
    const auto opened = parsed(o.replies[0]);
    CHECK(opened["type"] == "opened");
    CHECK(opened["version"] == "2");
    CHECK(opened["id"] == session);
    CHECK(opened["seq"] == 1);
    CHECK(opened["clientseq"] == 1);
    CHECK(opened["parameters"]["media"][0]["channels"] == nlohmann::json::array({"external", "internal"}));

    // Interleaved PCMU bytes: E0 I0 E1 | I1.
    auto a = p.on_binary(std::vector<uint8_t>{10, 20, 11});
    REQUIRE(a.audio.size() == 2);
    CHECK(a.audio[0].bytes == std::vector<uint8_t>{10});
    CHECK(a.audio[1].bytes == std::vector<uint8_t>{20});
    auto b = p.on_binary(std::vector<uint8_t>{21});
    REQUIRE(b.audio.size() == 2);
    CHECK(b.audio[0].bytes == std::vector<uint8_t>{11});
    CHECK(b.audio[1].bytes == std::vector<uint8_t>{21});

    auto ping = p.on_text(msg(2, "ping", R"({"rtt":"PT0.05S"})"));
    REQUIRE(ping.replies.size() == 1);
    CHECK(parsed(ping.replies[0])["type"] == "pong");
    CHECK(parsed(ping.replies[0])["seq"] == 2);
    CHECK(parsed(ping.replies[0])["clientseq"] == 2);
    auto up = p.on_text(msg(3, "update", R"({"language":"es-ES"})"));
    REQUIRE(up.metadata.has_value());
    CHECK((*up.metadata)["language"] == "es-ES");
    CHECK(parsed(up.replies.at(0))["type"] == "updated");
    auto paused = p.on_text(msg(4, "paused"));
    REQUIRE(paused.events.size() == 1);
    CHECK(paused.events[0].type == "paused");
    auto resumed = p.on_text(msg(5, "resumed", R"({"start":"PT3.0S","discarded":"PT1.5S"})"));
    REQUIRE(resumed.events.size() == 1);
    CHECK(resumed.events[0].data["discarded"] == "PT1.5S");

    const auto ev = p.on_result(1, final_event("hello there"));
    REQUIRE(ev.size() == 1);
    const auto e = parsed(ev[0]);
    CHECK(e["type"] == "event");
    const auto& t = e["parameters"]["entities"][0];
    CHECK(t["type"] == "transcript");
    CHECK(t["data"]["channel"] == "internal");
    CHECK(t["data"]["isFinal"] == true);
    CHECK(t["data"]["offset"] == "PT1.20S");
    CHECK(t["data"]["duration"] == "PT1.25S");
    CHECK(std::regex_match(t["data"]["id"].get<std::string>(),
                           std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
    const auto& alt = t["data"]["alternatives"][0];
    CHECK(alt["confidence"].get<double>() == doctest::Approx(0.75));
    CHECK(alt["languages"][0] == "es-ES");
    CHECK(alt["interpretations"][0]["transcript"] == "hello there");
    CHECK(alt["interpretations"][0]["tokens"][1]["offset"] == "PT1.70S");
    auto partial = final_event("hel");
    partial.is_final = false;
    CHECK(p.on_result(0, partial).empty());

    auto close = p.on_text(msg(6, "close", R"({"reason":"end"})"));
    CHECK(close.end == "close (end)");
    const auto d = p.on_drained();
    REQUIRE(d.replies.size() == 1);
    CHECK(parsed(d.replies[0])["type"] == "closed");
    CHECK(parsed(d.replies[0])["clientseq"] == 6);
  }

  TEST_CASE("AudioHook: a mono offer gives one channel, no PCMU offer is refused with disconnect") {
    audiohook_protocol p(session);
    auto o = p.on_text(msg(1, "open", R"({"media":[{"type":"audio","format":"PCMU","channels":["internal"],"rate":8000}]})"));
    REQUIRE(o.open.has_value());
    CHECK(o.open->start.channel_labels == std::vector<std::string>{"agent"});
    audiohook_protocol q(session);
    auto r = q.on_text(msg(1, "open", R"({"media":[{"type":"audio","format":"L16","channels":["external"],"rate":16000}]})"));
    CHECK(error_reason(r).find("no media offer of PCMU") != std::string::npos);
    const auto disconnect = parsed(r.error->reply);
    CHECK(disconnect["type"] == "disconnect");
    CHECK(disconnect["parameters"]["reason"] == "error");
  }

  TEST_CASE("AudioHook hostile: wrong version, seq out of order, other session id, before open, audio first, unknown type") {
    CHECK(error_reason(audiohook_protocol(session).on_text("nope")).find("not JSON") != std::string::npos);
    CHECK(error_reason(audiohook_protocol(session).on_text(
              R"({"version":"1","id":"x","type":"open","seq":1,"parameters":{}})")) == "version must be \"2\"");
    CHECK(error_reason(audiohook_protocol(session).on_text(msg(2, "open", open_params))) == "seq 2 where 1 was due");
    CHECK(error_reason(audiohook_protocol(session).on_text(msg(1, "ping"))) == "\"ping\" before open");
    CHECK(error_reason(audiohook_protocol(session).on_binary(std::vector<uint8_t>{1, 2})) == "audio before opened");
    audiohook_protocol p(session);
    REQUIRE(p.on_text(msg(1, "open", open_params)).open);
    CHECK(error_reason(p.on_text(msg(2, "dance"))) == "unknown message type \"dance\"");
    audiohook_protocol q(session);
    REQUIRE(q.on_text(msg(1, "open", open_params)).open);
    CHECK(error_reason(q.on_text(msg(2, "open", open_params))) == "a second open");
    audiohook_protocol r("another-session");
    CHECK(error_reason(r.on_text(msg(1, "open", open_params))).find("session id changed") != std::string::npos);
  }
}
