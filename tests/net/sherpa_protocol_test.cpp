// The sherpa-onnx streaming protocol, by a client written from its published format
// (PROTOCOLS.md; sherpa-onnx's online-websocket-client-decode-file.py): float32 samples at
// 16 kHz in messages of 8000 samples, "Done", results until "Done!", then the close.
#include "tests/net/honest_stream.hpp"

#include <cstring>

using namespace sluice;
using namespace sluice::test;

namespace {

// The text frames a sherpa session got, in order, and how it was closed.
struct sherpa_run {
  std::vector<std::string> texts;
  int close_code = -1;
  std::string error;  // what ended the read loop, when not a close frame
};

sherpa_run sherpa_session(uint16_t port, const std::string& path, const std::vector<std::vector<uint8_t>>& binary,
                          const std::vector<std::string>& texts) {
  asio::io_context ioc;
  websocket::stream<tcp::socket> ws(ioc);
  ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws.handshake("127.0.0.1", path);
  beast::error_code ec;
  ws.binary(true);
  for (const auto& b : binary)
    if (!ec) ws.write(asio::buffer(b), ec);
  ws.text(true);
  for (const auto& t : texts)
    if (!ec) ws.write(asio::buffer(t), ec);
  sherpa_run out;
  for (;;) {
    beast::flat_buffer buf;
    ws.read(buf, ec);
    if (ec) {
      if (ec == websocket::error::closed) out.close_code = ws.reason().code;
      else out.error = ec.message();
      break;
    }
    out.texts.push_back(beast::buffers_to_string(buf.data()));
  }
  return out;
}

// float32 LE messages of `per_message` samples, each int16 value / 32768 (as the client does).
std::vector<std::vector<uint8_t>> float_messages(const std::vector<int16_t>& pcm, std::size_t per_message) {
  std::vector<std::vector<uint8_t>> out;
  for (std::size_t i = 0; i < pcm.size(); i += per_message) {
    std::vector<uint8_t> m;
    for (std::size_t j = i; j < std::min(pcm.size(), i + per_message); ++j) {
      const float x = static_cast<float>(pcm[j]) / 32768.0f;
      uint8_t b[sizeof(float)];
      std::memcpy(b, &x, sizeof(float));
      m.insert(m.end(), b, b + sizeof(float));
    }
    out.push_back(std::move(m));
  }
  return out;
}

constexpr std::size_t client_samples_per_message = 8000;  // the Python client's default

}  // namespace

TEST_SUITE("sherpa protocol") {
  TEST_CASE("a file streamed as float32 at 16 kHz: results per segment, finals equal /v1/stream's, is_eof then Done!") {
    served s({}, true);
    const auto pcm = call_pcm16(0, 16000);
    // The independent reference: the same int16 samples through the sluice protocol.
    auto ref = ws_session(s.port, "/v1/stream", {R"({"type":"start","sample_rate":16000})"},
                          pcm16_messages(pcm, client_samples_per_message), {R"({"type":"end"})"});
    const auto want = final_texts(ref.messages);
    REQUIRE(want.size() >= 2);
    const uint16_t own = s.server->port(net::ws_listener::sherpa);
    REQUIRE(own != 0);
    for (const auto& [port, path] : {std::pair<uint16_t, std::string>{own, "/"}, {s.port, "/sherpa"}}) {
      CAPTURE(path);
      auto r = sherpa_session(port, path, float_messages(pcm, client_samples_per_message), {"Done"});
      CHECK(r.close_code == 1000);
      REQUIRE(r.texts.size() >= 3);
      CHECK(r.texts.back() == "Done!");
      std::vector<std::string> finals;
      int64_t segment = 0;
      for (std::size_t i = 0; i + 1 < r.texts.size(); ++i) {
        const auto m = json::parse(r.texts[i], nullptr, false);
        REQUIRE_MESSAGE(m.is_object(), r.texts[i]);
        for (const char* key : {"text", "tokens", "timestamps", "segment", "start_time", "is_final", "is_eof", "words"})
          CHECK_MESSAGE(m.contains(key), key << " missing in " << r.texts[i]);
        const bool eof = m["is_eof"].get<bool>();
        CHECK(eof == (i + 2 == r.texts.size()));  // only the last result before Done!
        if (eof) break;
        CHECK(m["segment"].get<int64_t>() == segment);
        CHECK(m["tokens"].size() == m["timestamps"].size());
        if (m["is_final"].get<bool>()) {
          finals.push_back(m["text"]);
          ++segment;
        }
      }
      CHECK(finals == want);
      const auto last = json::parse(r.texts[r.texts.size() - 2]);
      CHECK(last["text"] == want.back());  // what the Python client prints as its final result
    }
  }

  TEST_CASE("Done before any audio: an empty eof result, Done!, close 1000") {
    served s({}, true);
    auto r = sherpa_session(s.server->port(net::ws_listener::sherpa), "/", {}, {"Done"});
    REQUIRE(r.texts.size() == 2);
    const auto m = json::parse(r.texts[0]);
    CHECK(m["is_eof"] == true);
    CHECK(m["text"] == "");
    CHECK(r.texts[1] == "Done!");
    CHECK(r.close_code == 1000);
  }

  TEST_CASE("hostile sherpa input: torn floats, NaN, unknown text, huge message get a clear error - honest stream unaffected") {
    config::sluice_config cfg;
    cfg.server.max_message_bytes = 64 * 1024;
    served s(cfg, true);
    const auto ref = reference_finals(s.port);
    honest_stream h(s.port);
    const uint16_t port = s.server->port(net::ws_listener::sherpa);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<uint8_t> nan_bytes(sizeof(float));
    std::memcpy(nan_bytes.data(), &nan, sizeof(float));
    struct bad_case {
      std::vector<std::vector<uint8_t>> binary;
      std::vector<std::string> texts;
      std::string about;
    };
    const std::vector<bad_case> cases = {
        {{{1, 2, 3}}, {}, "multiple of 4"},   // truncated float
        {{nan_bytes}, {}, "finite"},          // not a sample
        {{}, {"done"}, "Done"},               // unknown text (case matters)
        {{}, {R"({"type":"start"})"}, "Done"}, // another protocol's start
    };
    for (const auto& c : cases) {
      CAPTURE(c.about);
      auto r = sherpa_session(port, "/", c.binary, c.texts);
      REQUIRE(r.texts.size() == 1);
      const auto m = json::parse(r.texts[0], nullptr, false);
      CHECK(m.value("error", std::string()) == "protocol");
      CHECK_MESSAGE(m.value("reason", std::string()).find(c.about) != std::string::npos, r.texts[0]);
      CHECK(r.close_code == 1008);
    }
    // Over server.max_message_bytes: Beast answers 1009 (a client still writing may see the
    // connection end instead); no result either way.
    auto big = sherpa_session(port, "/", {std::vector<uint8_t>(80 * 1024, 0)}, {"Done"});
    CHECK_MESSAGE((big.close_code == 1009 || !big.error.empty()), big.error);
    CHECK(big.texts.empty());
    CHECK(h.finish() == ref);
  }
}
