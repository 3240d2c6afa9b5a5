#pragma once
// A served engine on a free loopback port, and small blocking Beast clients for the tests.
#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "dsp/audio_file.hpp"
#include "dsp/resampler.hpp"
#include "moe/acoustic_model.hpp"
#include "net/server.hpp"
#include "tests/common/poll_until.hpp"

namespace sluice::test {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

inline std::shared_ptr<const moe::acoustic_model> served_model() {
  static auto m = *moe::load_model(SLUICE_SOURCE_DIR "/models/default");
  return m;
}

struct served {
  std::unique_ptr<actors::engine> engine;
  std::unique_ptr<net::server> server;
  uint16_t port = 0;

  /// `protocol_ports`: also the FunASR, sherpa-onnx and Vosk ports of [listeners], each on any
  /// free port (server->port(net::ws_listener::...)); otherwise none of them.
  explicit served(config::sluice_config cfg = {}, bool protocol_ports = false) {
    cfg.model.dir = SLUICE_SOURCE_DIR "/models/default";
    cfg.engine.report_ms = 50;
    cfg.engine.scheduler_threads = 2;
    cfg.engine.placement_probe_ms = 0;  // nominal placement: no start-up benchmark per test
    cfg.server.port = 0;
    cfg.audiosocket.port = 0;  // the AudioSocket listener on a free port too
    // The switch emulators send whole calls at network speed to keep the suite fast; a real
    // switch sends in real time. The speed limit is off unless a test sets its own value.
    if (cfg.server.switch_max_speed == config::server_config{}.switch_max_speed) cfg.server.switch_max_speed = 0;
    auto res = actors::engine_resources::create(cfg, served_model());
    REQUIRE(res.has_value());
    engine = actors::engine::start(*res);
    cfg.listeners.funasr_port = cfg.listeners.sherpa_port = cfg.listeners.vosk_port = 0;
    auto s = net::server::start(*engine, cfg.server, cfg.auth,
                                protocol_ports ? cfg.listeners : net::server::no_listeners(), cfg.audiosocket,
                                cfg.calls);
    REQUIRE(s.has_value());
    server = std::move(*s);
    port = server->port();
  }
  ~served() {
    server.reset();
    engine.reset();
  }
};

struct http_reply {
  int status = 0;
  std::string body;
  std::string content_type;
};

inline http_reply http_request(uint16_t port, http::verb verb, const std::string& target, std::string body = {}) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.body() = std::move(body);
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(stream, buf, parser);
  auto res = parser.release();
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return {static_cast<int>(res.result_int()), res.body(), std::string(res[http::field::content_type])};
}

// The messages a WebSocket session got, and how it was closed.
struct ws_result {
  std::vector<json> messages;
  int close_code = -1;  // -1: not closed cleanly by the server
  std::string close_reason;  // the close frame's reason text
  std::string error;    // what ended the read loop, when not a close frame
};

// On an open WebSocket `ws` (plain or TLS): sends `texts_before`, then the binary `frames`, then
// `texts_after`; reads until close.
template <class Stream>
ws_result exchange(websocket::stream<Stream>& ws, const std::vector<std::string>& texts_before,
                   const std::vector<std::vector<uint8_t>>& frames, const std::vector<std::string>& texts_after) {
  ws_result out;
  beast::error_code ec;
  for (const auto& t : texts_before) {
    ws.text(true);
    ws.write(asio::buffer(t), ec);
  }
  for (const auto& f : frames) {
    if (ec) break;
    ws.binary(true);
    ws.write(asio::buffer(f), ec);
  }
  for (const auto& t : texts_after) {
    if (ec) break;
    ws.text(true);
    ws.write(asio::buffer(t), ec);
  }
  for (;;) {
    beast::flat_buffer buf;
    ws.read(buf, ec);
    if (ec) {
      if (ec == websocket::error::closed) {
        out.close_code = ws.reason().code;
        out.close_reason = std::string(ws.reason().reason.c_str());
      }
      else out.error = ec.message();
      break;
    }
    auto j = json::parse(beast::buffers_to_string(buf.data()), nullptr, false);
    if (!j.is_discarded()) out.messages.push_back(j);
  }
  return out;
}

// Sends `texts_before`, then the binary `frames`, then `texts_after`; reads until close.
inline ws_result ws_session(uint16_t port, const std::string& path, const std::vector<std::string>& texts_before,
                            const std::vector<std::vector<uint8_t>>& frames, const std::vector<std::string>& texts_after) {
  asio::io_context ioc;
  websocket::stream<tcp::socket> ws(ioc);
  ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws.handshake("127.0.0.1", path);
  return exchange(ws, texts_before, frames, texts_after);
}

// The bundled call's WAV file, its bytes as a client would upload them.
inline std::string call_wav_bytes() {
  std::ifstream in(SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Channel `ch` of the bundled call at `rate` Hz, quantised to 16-bit PCM values (so that a
// float32 client and a PCM16 client send the engine the very same samples).
inline std::vector<int16_t> call_pcm16(int ch, int rate) {
  auto a = dsp::decode_audio_file(SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav");
  REQUIRE(a.has_value());
  dsp::audio mono{a->sample_rate, {a->channels[static_cast<std::size_t>(ch)]}};
  auto r = dsp::resample(mono, rate);
  REQUIRE(r.has_value());
  std::vector<int16_t> out;
  for (float x : r->channels[0]) out.push_back(static_cast<int16_t>(std::lround(std::clamp(x, -1.0f, 1.0f) * 32767.0f)));
  return out;
}

// `pcm` cut into binary messages of `per_message` samples, as 16-bit LE bytes.
inline std::vector<std::vector<uint8_t>> pcm16_messages(const std::vector<int16_t>& pcm, std::size_t per_message) {
  std::vector<std::vector<uint8_t>> out;
  for (std::size_t i = 0; i < pcm.size(); i += per_message) {
    std::vector<uint8_t> m;
    for (std::size_t j = i; j < std::min(pcm.size(), i + per_message); ++j) {
      m.push_back(static_cast<uint8_t>(pcm[j] & 0xFF));
      m.push_back(static_cast<uint8_t>((pcm[j] >> 8) & 0xFF));
    }
    out.push_back(std::move(m));
  }
  return out;
}

// Channel `ch` of the bundled call as 8 kHz PCM16 in 100 ms frames.
inline std::vector<std::vector<uint8_t>> call_pcm16_frames(int ch = 0) {
  auto a = dsp::decode_audio_file(SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav");
  REQUIRE(a.has_value());
  const auto& x = a->channels[static_cast<std::size_t>(ch)];
  std::vector<std::vector<uint8_t>> frames;
  for (std::size_t i = 0; i < x.size(); i += 800) {
    std::vector<uint8_t> f;
    for (std::size_t j = i; j < std::min(x.size(), i + 800); ++j) {
      const auto v = static_cast<int16_t>(std::lround(std::clamp(x[j], -1.0f, 1.0f) * 32767.0f));
      f.push_back(static_cast<uint8_t>(v & 0xFF));
      f.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
    }
    frames.push_back(std::move(f));
  }
  return frames;
}

}  // namespace sluice::test
