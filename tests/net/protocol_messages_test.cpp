// The pure parts of the field protocols: Vosk's text messages, sherpa-onnx's float32 frames and
// the subprotocol offer check (any byte string in, a value or a named error out).
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "net/protocols/sherpa_protocol.hpp"
#include "net/protocols/vosk_protocol.hpp"

using namespace sluice;
using namespace sluice::net;

TEST_SUITE("protocol messages") {
  TEST_CASE("Vosk: config fields, eof and reset as its clients send them") {
    auto c = parse_vosk_message(R"({ "config" : { "sample_rate" : 16000.0, "phrase_list" : ["refund", "order id"],
                                      "words" : 1, "max_alternatives" : 3 } })");
    REQUIRE_MESSAGE(c.has_value(), c.error().message);
    REQUIRE(c->config.has_value());
    CHECK(c->config->sample_rate == 16000);
    CHECK(c->config->phrases == std::vector<std::string>{"refund", "order id"});
    CHECK(c->config->words);
    CHECK(c->config->max_alternatives == 3);
    auto defaults = parse_vosk_message(R"({"config": {}})");
    REQUIRE(defaults.has_value());
    CHECK(defaults->config->sample_rate == 8000);
    CHECK_FALSE(defaults->config->words);
    auto eof = parse_vosk_message(R"({"eof" : 1})");
    REQUIRE(eof.has_value());
    CHECK(eof->eof);
    CHECK_FALSE(eof->reset);
    CHECK_FALSE(eof->config.has_value());
    auto reset = parse_vosk_message(R"({"reset" : 1})");
    REQUIRE(reset.has_value());
    CHECK(reset->reset);
  }

  TEST_CASE("Vosk: every bad message is an error naming what is wrong") {
    CHECK(parse_vosk_message("{eof").error().code == errc::corrupt);
    CHECK(parse_vosk_message("[1]").error().code == errc::corrupt);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"config": {"sample_rate": 100}})", "sample_rate"},
        {R"({"config": {"sample_rate": 8000.25}})", "sample_rate"},
        {R"({"config": {"phrase_list": [1]}})", "phrase_list"},
        {R"({"config": {"phrase_list": ")" + std::string(300, 'a') + R"("}})", "phrase_list"},
        {R"({"config": {"words": 2}})", "words"},
        {R"({"config": {"max_alternatives": -1}})", "max_alternatives"},
        {R"({"eof": 0})", "eof"},
        {R"({"reset": "1"})", "reset"},
        {R"({"eof": 1, "reset": 1})", "expected"},
        {R"({})", "expected"},
    };
    for (const auto& [text, about] : cases) {
      CAPTURE(text);
      auto r = parse_vosk_message(text);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::invalid_argument);
      CHECK_MESSAGE(r.error().message.find(about) != std::string::npos, r.error().message);
    }
  }

  TEST_CASE("sherpa-onnx: float32 LE samples, clamped - torn frames and non-finite samples refused") {
    const float in[] = {0.5f, -0.25f, 1.5f, -3.0f};
    std::vector<uint8_t> bytes(sizeof(in));
    std::memcpy(bytes.data(), in, sizeof(in));
    auto r = sherpa_samples(bytes);
    REQUIRE(r.has_value());
    CHECK(*r == std::vector<float>{0.5f, -0.25f, 1.0f, -1.0f});
    CHECK(sherpa_samples({}).value().empty());
    auto torn = sherpa_samples({0, 0, 0, 0, 1});
    REQUIRE_FALSE(torn.has_value());
    CHECK(torn.error().message.find("multiple of 4") != std::string::npos);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      std::vector<uint8_t> b(sizeof(float));
      std::memcpy(b.data(), &bad, sizeof(float));
      CHECK_FALSE(sherpa_samples(b).has_value());
    }
  }

  TEST_CASE("a subprotocol is granted only when offered exactly") {
    CHECK(offers_subprotocol("binary", "binary"));
    CHECK(offers_subprotocol("chat, binary", "binary"));
    CHECK(offers_subprotocol(" ws ,x", "ws"));
    CHECK_FALSE(offers_subprotocol("wss", "ws"));
    CHECK_FALSE(offers_subprotocol("binaryx, chat", "binary"));
    CHECK_FALSE(offers_subprotocol("", "ws"));
  }
}
