#include "net/connection.hpp"

#include <array>
#include <chrono>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>

#include "net/connection_slot.hpp"
#include "net/http_session.hpp"
#include "net/tls_context.hpp"

namespace sluice::net {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

// Bytes read per read while draining a refused plain client (see refuse_plain).
constexpr std::size_t drain_chunk_bytes = 4096;

class tls_detector : public std::enable_shared_from_this<tls_detector> {
 public:
  tls_detector(asio::ip::tcp::socket socket, std::shared_ptr<server_state> st, ws_listener kind,
               std::shared_ptr<connection_slot> slot)
      : stream_(std::move(socket)), st_(std::move(st)), kind_(kind), slot_(std::move(slot)) {}

  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->guarded([&] { self->detect(); }); });
  }

 private:
  // Nothing thrown here leaves the handler: the connection is dropped (its socket closes with
  // this object), the server goes on.
  template <class F>
  void guarded(F&& f) noexcept {
    try {
      f();
    } catch (const std::exception& e) {
      spdlog::error("tls: a connection handler threw: {}; closing that connection", e.what());
    } catch (...) {
      spdlog::error("tls: a connection handler threw an exception of unknown type; closing that connection");
    }
  }

  void detect() {
    stream_.expires_after(std::chrono::seconds(st_->cfg.idle_timeout_s));
    beast::async_detect_ssl(stream_, buffer_, [self = shared_from_this()](beast::error_code ec, bool tls) {
      self->guarded([&] { self->on_detect(ec, tls); });
    });
  }

  void on_detect(beast::error_code ec, bool tls) {
    if (ec) return;  // gone or silent past the timeout
    if (!tls) return refuse_plain();
    const auto ctx = st_->tls->current();
    // The SSL object made here holds its own reference to the context's SSL_CTX, so a reload
    // that replaces `ctx` later does not touch this connection.
    tls_.emplace(std::move(stream_), *ctx);
    // `used` has a default: Beast 1.81 constrains this handler with the one-argument signature
    // of the unbuffered handshake (it is called with two).
    tls_->async_handshake(ssl::stream_base::server, buffer_.data(),
                          [self = shared_from_this()](beast::error_code e, std::size_t used = 0) {
                            self->guarded([&] { self->on_handshake(e, used); });
                          });
  }

  void on_handshake(beast::error_code ec, std::size_t used) {
    if (ec) {
      spdlog::debug("tls: handshake failed: {}", ec.message());
      return;
    }
    buffer_.consume(used);
    run_http_session(std::move(*tls_), std::move(buffer_), st_, kind_, std::move(slot_));
  }

  // A plain-HTTP client on a TLS port: one plain answer it can read, then the connection ends.
  void refuse_plain() {
    auto res = std::make_shared<http::response<http::string_body>>(http::status::bad_request, 11);
    res->set(http::field::server, "sluice");
    res->set(http::field::content_type, "text/plain");
    res->keep_alive(false);
    res->body() = "this server speaks only TLS: use https:// or wss://\n";
    res->prepare_payload();
    spdlog::info("tls: a plain-text client was refused (this port serves only TLS)");
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
      self->guarded([&] {
        if (ec) return;
        beast::error_code ignored;
        self->stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
        self->drain();
      });
    });
  }

  // Reads what the client still sends until it closes (or the timeout): closing a socket with
  // unread bytes sends a TCP reset, which can make the client lose the answer above.
  void drain() {
    stream_.async_read_some(asio::buffer(drain_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) self->guarded([&] { self->drain(); });
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::shared_ptr<server_state> st_;
  ws_listener kind_;
  std::shared_ptr<connection_slot> slot_;  // counted from accept, through the handshake
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  std::array<char, drain_chunk_bytes> drain_{};
};

}  // namespace

void run_connection(asio::ip::tcp::socket socket, std::shared_ptr<server_state> st, ws_listener kind) {
  // Counted from here: a client still in its TLS handshake (or its HTTP request) holds a slot.
  auto slot = std::make_shared<connection_slot>(st, kind);
  if (!st->tls)
    return run_http_session(beast::tcp_stream(std::move(socket)), beast::flat_buffer{}, std::move(st), kind,
                            std::move(slot));
  if (slot->over_limit()) {
    // No TLS yet to answer in, and a handshake would cost what the limit protects: the
    // connection is closed at once (the socket closes as it goes out of scope).
    spdlog::info("tls: a connection was closed before its handshake: too many connections ({} = {})",
                 kind == ws_listener::main ? std::string("server.max_connections")
                                           : "listeners." + std::string(listener_name(kind)) + "_max_connections",
                 st->max_connections(kind));
    return;
  }
  std::make_shared<tls_detector>(std::move(socket), std::move(st), kind, std::move(slot))->run();
}

}  // namespace sluice::net
