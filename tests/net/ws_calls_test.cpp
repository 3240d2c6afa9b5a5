// Every WebSocket stream is one call in the server's registry (net/calls): begun with its
// source and channel labels when it starts, every final recorded under its channel, ended with
// its reason when the stream ends.
#include "tests/net/net_test_util.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

const std::string start_8k = R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})";

std::vector<std::string> finals_sent(const ws_result& r, const char* final_type_key, const char* final_value) {
  std::vector<std::string> out;
  for (const auto& m : r.messages)
    if (m.value(final_type_key, std::string()) == final_value && !m.value("text", std::string()).empty()) {
      std::string t = m["text"];
      // FunASR's sentences after the first start with a space (its clients append them).
      if (!out.empty() && t.rfind(' ', 0) == 0) t.erase(0, 1);
      out.push_back(std::move(t));
    }
  return out;
}

// Waits until the server's registry holds exactly one call and it has ended.
net::calls::call_record the_ended_call(served& s) {
  REQUIRE(poll_until([&] {
    auto l = s.server->calls().list();
    return l.size() == 1 && !l.front().live;
  }));
  return s.server->calls().list().front();
}

std::vector<std::string> recorded_finals(const net::calls::call_record& c, std::size_t channel) {
  std::vector<std::string> out;
  for (const auto& f : c.channels.at(channel).finals) out.push_back(f.text);
  return out;
}

}  // namespace

TEST_SUITE("ws calls") {
  TEST_CASE("a /v1/stream stream is one call: source stream, channel mono, its finals recorded, ended done") {
    served s;
    auto r = ws_session(s.port, "/v1/stream", {start_8k}, call_pcm16_frames(), {R"({"type":"end"})"});
    REQUIRE(r.close_code == 1000);
    const auto sent = finals_sent(r, "type", "final");
    REQUIRE(sent.size() >= 2);
    const auto c = the_ended_call(s);
    CHECK(c.start.source == "stream");
    CHECK(c.start.channel_labels == std::vector<std::string>{"mono"});
    CHECK(c.end_reason == "done");
    REQUIRE(c.channels.size() == 1);
    CHECK(recorded_finals(c, 0) == sent);
  }

  TEST_CASE("a FunASR stream is one call with source funasr and its mode - a refused start makes no call") {
    served s;
    auto bad = ws_session(s.port, "/funasr", {R"({"mode":"fast"})"}, {}, {});
    CHECK(bad.close_code == 1003);
    CHECK(s.server->calls().list().empty());
    auto r = ws_session(s.port, "/funasr", {R"({"mode":"offline","wav_name":"w","audio_fs":8000,"itn":false})"}, call_pcm16_frames(),
                        {R"({"is_speaking":false})"});
    REQUIRE(r.close_code == 1000);
    const auto c = the_ended_call(s);
    CHECK(c.start.source == "funasr");
    CHECK(c.start.metadata.value("mode", std::string()) == "offline");
    CHECK(c.end_reason == "done");
    // itn off: the sentences are the words as spoken, which the call keeps as its lexical text.
    CHECK(recorded_finals(c, 0) == finals_sent(r, "mode", "offline"));
  }

  TEST_CASE("a client that leaves in the middle ends its call as \"client left\"") {
    served s;
    {
      asio::io_context ioc;
      websocket::stream<tcp::socket> ws(ioc);
      ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
      ws.handshake("127.0.0.1", "/v1/stream");
      ws.write(asio::buffer(start_8k));
      beast::flat_buffer b;
      ws.read(b);  // ready: the call has begun
      ws.close(websocket::close_code::normal);
    }
    const auto c = the_ended_call(s);
    CHECK(c.end_reason == "client left");
  }
}
