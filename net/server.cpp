#include "net/server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <spdlog/spdlog.h>

#include "net/http_session.hpp"

namespace sluice::net {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

class listener : public std::enable_shared_from_this<listener> {
 public:
  listener(asio::io_context& ioc, tcp::acceptor acceptor, std::shared_ptr<server_state> st)
      : ioc_(ioc), acceptor_(std::move(acceptor)), st_(std::move(st)) {}

  void run() { do_accept(); }
  void stop() {
    asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->acceptor_.close(ec);
    });
  }

 private:
  void do_accept() {
    // Each connection on its own strand: its handlers never run concurrently.
    acceptor_.async_accept(asio::make_strand(ioc_), beast::bind_front_handler(&listener::on_accept, shared_from_this()));
  }
  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    try {
      if (!ec) run_http_session(std::move(socket), st_);
    } catch (const std::exception& e) {
      // The new connection is dropped (its socket closes); the listener goes on.
      spdlog::error("server: could not start a connection: {}", e.what());
    }
    if (acceptor_.is_open()) do_accept();
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  std::shared_ptr<server_state> st_;
};

// Every handler catches its own exceptions (http_session, ws_session); this is the last line:
// an exception that still escapes one is logged and the thread goes back to serving, as asio
// allows (run() may be called again after it threw).
void run_io(asio::io_context& ioc) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      spdlog::error("server: an I/O handler threw: {}; serving on", e.what());
    } catch (...) {
      spdlog::error("server: an I/O handler threw an exception of unknown type; serving on");
    }
  }
}

}  // namespace

result<std::unique_ptr<server>> server::start(actors::engine& engine, const config::server_config& cfg,
                                             const config::auth_config& auth) {
  // Access policy first: a host it forbids is never bound.
  auto gate = auth::gate::create(cfg, auth);
  if (!gate) return tl::unexpected(gate.error());
  std::unique_ptr<server> s(new server());
  s->state_ = std::make_shared<server_state>();
  s->state_->engine = &engine;
  s->state_->cfg = cfg;
  s->state_->policy = request_policy(cfg);
  s->state_->gate = std::move(*gate);
  s->ioc_ = std::make_unique<asio::io_context>(cfg.io_threads);
  beast::error_code ec;
  const auto address = asio::ip::make_address(cfg.host, ec);
  if (ec) return fail(errc::invalid_config, "server.host = \"" + cfg.host + "\" is not an IP address");
  tcp::acceptor acceptor(asio::make_strand(*s->ioc_));
  const tcp::endpoint ep{address, static_cast<unsigned short>(cfg.port)};
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return fail(errc::io, "cannot listen on " + cfg.host + ":" + std::to_string(cfg.port) + ": " + ec.message());
  s->port_ = acceptor.local_endpoint().port();
  auto l = std::make_shared<listener>(*s->ioc_, std::move(acceptor), s->state_);
  l->run();
  s->listener_ = l;
  for (int i = 0; i < cfg.io_threads; ++i) s->threads_.emplace_back([ioc = s->ioc_.get()] { run_io(*ioc); });
  return s;
}

void server::stop() {
  if (stopped_) return;
  stopped_ = true;
  state_->draining = true;
  std::static_pointer_cast<listener>(listener_)->stop();
  // Streams end through the engine's drain (their channels deliver finals, then close).
  state_->engine->shutdown();
  // Give sessions a moment to flush their last messages, then stop the I/O threads.
  for (int i = 0; i < 50 && state_->connections > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ioc_->stop();
  for (auto& t : threads_) t.join();
}

server::~server() { stop(); }

}  // namespace sluice::net
