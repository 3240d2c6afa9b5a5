#pragma once
// An honest /v1/stream client that runs alongside an attack: it opens its stream and sends the
// first half of the call before the attack, the rest after, so the two always overlap (no
// sleeps); its finals must equal those the same call gets alone.
#include "tests/net/net_test_util.hpp"

namespace sluice::test {

inline const std::string honest_start = R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})";

inline std::vector<std::string> final_texts(const std::vector<json>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages)
    if (m.is_object() && m.value("type", std::string()) == "final" && m.contains("text") && m["text"].is_string())
      out.push_back(m["text"].get<std::string>());
  return out;
}

class honest_stream {
 public:
  /// Connects, starts, waits for "ready", sends the first half of the call.
  explicit honest_stream(uint16_t port) : ws_(ioc_), frames_(call_pcm16_frames()) {
    ws_.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    ws_.handshake("127.0.0.1", "/v1/stream");
    ws_.text(true);
    ws_.write(asio::buffer(honest_start));
    beast::flat_buffer b;
    ws_.read(b);
    const auto ready = json::parse(beast::buffers_to_string(b.data()), nullptr, false);
    REQUIRE_MESSAGE(ready.value("type", std::string()) == "ready", beast::buffers_to_string(b.data()));
    send(0, frames_.size() / 2);
  }

  /// Sends the rest of the call and the end; reads to the server's close. Returns the finals.
  std::vector<std::string> finish() {
    send(frames_.size() / 2, frames_.size());
    ws_.text(true);
    ws_.write(asio::buffer(std::string(R"({"type":"end"})")));
    std::vector<json> messages;
    beast::error_code ec;
    for (;;) {
      beast::flat_buffer b;
      ws_.read(b, ec);
      if (ec) break;
      messages.push_back(json::parse(beast::buffers_to_string(b.data()), nullptr, false));
    }
    CHECK_MESSAGE(ec == websocket::error::closed, "the honest stream ended with: " << ec.message());
    CHECK(ws_.reason().code == websocket::close_code::normal);
    REQUIRE_FALSE(messages.empty());
    CHECK(messages.back().value("type", std::string()) == "end");
    return final_texts(messages);
  }

 private:
  void send(std::size_t from, std::size_t to) {
    ws_.binary(true);
    for (std::size_t i = from; i < to; ++i) ws_.write(asio::buffer(frames_[i]));
  }

  asio::io_context ioc_;
  websocket::stream<tcp::socket> ws_;
  std::vector<std::vector<uint8_t>> frames_;
};

/// The finals of the bundled call streamed alone.
inline std::vector<std::string> reference_finals(uint16_t port) {
  auto ref = honest_stream(port).finish();
  REQUIRE(ref.size() >= 2);
  return ref;
}

}  // namespace sluice::test
