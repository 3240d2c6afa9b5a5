// Twilio Media Streams as a pure state machine: connected/start/media/dtmf/mark/stop, two
// tracks as two channels, base64 μ-law, and each kind of bad message.
#include "tests/net/switch_protocol_util.hpp"

#include "net/switches/twilio_protocol.hpp"

using namespace sluice;
using namespace sluice::test;
using namespace sluice::net::switches;

namespace {

const std::string start_both = R"({"event":"start","sequenceNumber":"1","streamSid":"MZ1","start":{"accountSid":"AC1","streamSid":"MZ1","callSid":"CA1","tracks":["inbound","outbound"],"customParameters":{"agent":"7"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}})";

std::string media(const std::string& track, const std::string& payload) {
  return R"({"event":"media","sequenceNumber":"3","streamSid":"MZ1","media":{"track":")" + track +
         R"(","chunk":"1","timestamp":"5","payload":")" + payload + R"("}})";
}

}  // namespace

TEST_SUITE("twilio protocol") {
  TEST_CASE("base64: RFC 4648 test vectors both ways, malformed text refused") {
    // RFC 4648 section 10.
    const std::vector<std::pair<std::string, std::string>> vectors{
        {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, coded] : vectors) {
      const std::vector<uint8_t> bytes(plain.begin(), plain.end());
      CHECK(encode_base64(bytes) == coded);
      const auto back = decode_base64(coded);
      REQUIRE(back.has_value());
      CHECK(*back == bytes);
    }
    CHECK_FALSE(decode_base64("Zm9").has_value());
    CHECK_FALSE(decode_base64("Zm9*").has_value());
    CHECK_FALSE(decode_base64("Z===").has_value());
    CHECK_FALSE(decode_base64("Zg==Zm9v").has_value());
  }

  TEST_CASE("Twilio: start opens one μ-law channel per track, media goes to its track's channel, stop ends") {
    twilio_protocol p;
    CHECK_FALSE(p.on_text(R"({"event":"connected","protocol":"Call","version":"1.0.0"})").error);
    auto s = p.on_text(start_both);
    REQUIRE(s.open.has_value());
    CHECK(s.open->start.source == "twilio");
    CHECK(s.open->start.external_id == "CA1");
    CHECK(s.open->start.channel_labels == std::vector<std::string>{"caller", "callee"});
    CHECK(s.open->codec == "mulaw");
    CHECK(s.open->sample_rate == 8000);
    CHECK(s.open->start.metadata["customParameters"]["agent"] == "7");
    CHECK(s.open->start.metadata["streamSid"] == "MZ1");
    auto in = p.on_text(media("inbound", "AAEC"));
    REQUIRE(in.audio.size() == 1);
    CHECK(in.audio[0].channel == 0);
    CHECK(in.audio[0].bytes == std::vector<uint8_t>{0, 1, 2});
    auto out = p.on_text(media("outbound", "/w=="));
    REQUIRE(out.audio.size() == 1);
    CHECK(out.audio[0].channel == 1);
    CHECK(out.audio[0].bytes == std::vector<uint8_t>{0xff});
    auto d = p.on_text(R"({"event":"dtmf","streamSid":"MZ1","sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"9"}})");
    REQUIRE(d.events.size() == 1);
    CHECK(d.events[0].type == "dtmf");
    CHECK(d.events[0].data["digit"] == "9");
    auto m = p.on_text(R"({"event":"mark","streamSid":"MZ1","sequenceNumber":"6","mark":{"name":"greeting"}})");
    REQUIRE(m.events.size() == 1);
    CHECK(m.events[0].data["name"] == "greeting");
    auto stop = p.on_text(R"({"event":"stop","sequenceNumber":"7","streamSid":"MZ1","stop":{"callSid":"CA1"}})");
    CHECK(stop.end == "stop");
    CHECK(p.on_result(0, final_event("hi")).empty());  // nothing goes back to Twilio
  }

  TEST_CASE("Twilio hostile: binary, not JSON, unknown event, media before start, unannounced track, bad base64, other formats") {
    CHECK(twilio_protocol().on_binary(std::vector<uint8_t>{1}).error->code == close_code::unsupported);
    CHECK(error_reason(twilio_protocol().on_text("{")).find("not JSON") != std::string::npos);
    CHECK(error_reason(twilio_protocol().on_text("[1]")) == "the text frame is not a JSON object");
    CHECK(error_reason(twilio_protocol().on_text(R"({"event":7})")) == "a message without a string \"event\"");
    CHECK(error_reason(twilio_protocol().on_text(media("inbound", "AAEC"))) == "\"media\" before start");
    twilio_protocol p;
    REQUIRE(p.on_text(R"({"event":"start","streamSid":"MZ1","start":{"callSid":"CA1","tracks":["inbound"]}})").open);
    CHECK(error_reason(p.on_text(media("outbound", "AAEC"))) == "media of track \"outbound\", not announced in start");
    CHECK(error_reason(p.on_text(media("inbound", "A*EC"))) == "the media payload is not base64");
    CHECK(error_reason(p.on_text(R"({"event":"clear","streamSid":"MZ1"})")) == "unknown event \"clear\"");
    CHECK(error_reason(p.on_text(R"({"event":"media","streamSid":"MZ2","media":{"payload":"AAEC"}})")) ==
          "streamSid differs from the start message's");
    CHECK(error_reason(p.on_text(start_both)) == "a second start");
    const auto alaw = R"({"event":"start","streamSid":"M","start":{"mediaFormat":{"encoding":"audio/x-alaw","sampleRate":8000,"channels":1}}})";
    CHECK(twilio_protocol().on_text(alaw).error->code == close_code::unsupported);
    CHECK(error_reason(twilio_protocol().on_text(R"({"event":"start","streamSid":"M","start":{"tracks":["both"]}})"))
              .find("unknown track") != std::string::npos);
  }
}
