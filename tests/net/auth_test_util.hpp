#pragma once
// Clients for the auth tests: HTTP requests and WebSocket handshakes with headers, the
// response's status and challenge, and a stream the test drives step by step.
#include "tests/net/net_test_util.hpp"

#include <utility>

#include "net/auth/key_store.hpp"
#include "tests/common/audio_tools.hpp"
#include "tests/common/command.hpp"

namespace sluice::test {

using headers = std::vector<std::pair<std::string, std::string>>;

// API keys for a test, in a keys file of their own (cfg.auth.keys_file = ring.path).
struct keyring {
  temp_dir dir;
  std::string path = dir.file("keys");
  std::string add(const std::string& tenant, const char* scopes) {
    auto k = net::auth::make_key(tenant, *net::auth::scope_set::parse(scopes));
    REQUIRE(k.has_value());
    REQUIRE(net::auth::append_record(path, k->record).has_value());
    return k->key;
  }
};

struct auth_reply {
  int status = 0;
  std::string body;
  std::string www_authenticate;
};

inline auth_reply request_with(uint16_t port, http::verb verb, const std::string& target, const headers& hs,
                               std::string body = {}) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : hs) req.set(k, v);
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
  return {static_cast<int>(res.result_int()), res.body(), std::string(res[http::field::www_authenticate])};
}

inline headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

// A WebSocket stream driven step by step. open() returns the handshake's HTTP status (101 when
// upgraded); a refused upgrade leaves the response in `refusal`.
class stepped_stream {
 public:
  explicit stepped_stream(uint16_t port) : ws_(ioc_), port_(port) {}

  int open(const std::string& target, const headers& hs) {
    ws_.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    ws_.set_option(websocket::stream_base::decorator([hs](websocket::request_type& req) {
      for (const auto& [k, v] : hs) req.set(k, v);
    }));
    beast::error_code ec;
    ws_.handshake(refusal, "127.0.0.1", target, ec);
    return static_cast<int>(refusal.result_int());
  }
  void send_text(const std::string& t) {
    ws_.text(true);
    ws_.write(asio::buffer(t));
  }
  void send_binary(const std::vector<uint8_t>& b) {
    ws_.binary(true);
    ws_.write(asio::buffer(b));
  }
  // Reads until a final with text arrives (true) or the stream ends (false).
  bool read_until_final_with_text() {
    for (;;) {
      auto m = read_one();
      if (!m) return false;
      if (m->value("type", "") == "final" && !m->value("text", "").empty()) return true;
    }
  }
  // Reads every message until the server closes; the close code, -1 when not a clean close.
  int read_to_close() {
    while (read_one()) {
    }
    return close_code_;
  }
  // The next message; nullopt when the stream ends.
  std::optional<json> read_next() { return read_one(); }
  const std::vector<json>& messages() const { return messages_; }
  std::vector<std::string> finals() const {
    std::vector<std::string> out;
    for (const auto& m : messages_)
      if (m.value("type", "") == "final") out.push_back(m["text"]);
    return out;
  }

  websocket::response_type refusal;

 private:
  std::optional<json> read_one() {
    beast::flat_buffer buf;
    beast::error_code ec;
    ws_.read(buf, ec);
    if (ec) {
      if (ec == websocket::error::closed) close_code_ = ws_.reason().code;
      return std::nullopt;
    }
    auto j = json::parse(beast::buffers_to_string(buf.data()), nullptr, false);
    if (j.is_discarded()) return json::object();
    messages_.push_back(j);
    return j;
  }

  asio::io_context ioc_;
  websocket::stream<tcp::socket> ws_;
  uint16_t port_;
  std::vector<json> messages_;
  int close_code_ = -1;
};

// A shell command's stdout.
inline std::string capture_stdout(const std::string& cmd) { return run_capture(cmd).out; }

}  // namespace sluice::test
