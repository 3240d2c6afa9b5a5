#include "net/server.hpp"

#include <functional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <spdlog/spdlog.h>

#include "net/connection.hpp"
#include "net/switches/audiosocket_listener.hpp"

namespace sluice::net {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

class listener : public std::enable_shared_from_this<listener> {
 public:
  listener(asio::io_context& ioc, tcp::acceptor acceptor, std::shared_ptr<server_state> st, ws_listener kind)
      : ioc_(ioc), acceptor_(std::move(acceptor)), st_(std::move(st)), kind_(kind) {}

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
      if (!ec) run_connection(std::move(socket), st_, kind_);
    } catch (const std::exception& e) {
      // The new connection is dropped (its socket closes); the listener goes on.
      spdlog::error("server: could not start a connection: {}", e.what());
    }
    if (acceptor_.is_open()) do_accept();
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  std::shared_ptr<server_state> st_;
  ws_listener kind_;
};

// Binds host:port for one listener; errc::io when it cannot listen.
result<tcp::acceptor> bind_port(asio::io_context& ioc, const asio::ip::address& address, const std::string& host, int port,
                                std::string_view what) {
  beast::error_code ec;
  tcp::acceptor acceptor(asio::make_strand(ioc));
  const tcp::endpoint ep{address, static_cast<unsigned short>(port)};
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return fail(errc::io, "cannot listen on " + host + ":" + std::to_string(port) + " (" + std::string(what) +
                              "): " + ec.message());
  return acceptor;
}

// Calls `check` every `period_s` on a strand of its own until stop(): the timed reloads of the
// TLS files (server.tls_reload_check_s) and of the keys file (auth.keys_reload_check_s).
class file_watch : public std::enable_shared_from_this<file_watch> {
 public:
  file_watch(asio::io_context& ioc, std::string what, std::function<void()> check, int period_s)
      : timer_(asio::make_strand(ioc)), what_(std::move(what)), check_(std::move(check)), period_(period_s) {}
  void run() {
    timer_.expires_after(period_);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;  // cancelled: the server stops
      try {
        self->check_();
      } catch (const std::exception& e) {
        spdlog::error("{}: checking the files threw: {}", self->what_, e.what());
      }
      self->run();
    });
  }
  void stop() {
    asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
  }

 private:
  asio::steady_timer timer_;
  std::string what_;  // the log's subsystem
  std::function<void()> check_;
  std::chrono::seconds period_;
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
                                             const config::auth_config& auth,
                                             const config::listeners_config& listeners,
                                             const std::optional<config::audiosocket_config>& audiosocket,
                                             const config::calls_config& calls) {
  if (auto why = listeners.check(); !why.empty()) return fail(errc::invalid_config, "[listeners] " + why);
  // Access policy first: a host it forbids is never bound.
  auto gate = auth::gate::create(cfg, auth);
  if (!gate) return tl::unexpected(gate.error());
  std::unique_ptr<server> s(new server());
  s->state_ = std::make_shared<server_state>();
  s->state_->engine = &engine;
  s->state_->cfg = cfg;
  s->state_->listeners = listeners;
  s->state_->policy = request_policy(cfg);
  s->state_->gate = std::move(*gate);
  s->state_->auth_cfg = auth;
  if (s->state_->gate->enabled() && auth.max_failures > 0)
    s->state_->auth_failures = std::make_shared<auth::failure_limiter>(auth);
  s->state_->calls_cfg = calls;
  s->state_->calls = std::make_shared<calls::call_registry>(static_cast<std::size_t>(calls.max_recent),
                                                               static_cast<std::size_t>(calls.max_events_per_call));
  if (calls.store) {
    const auto path = calls::call_store::path_of(calls);
    auto store = calls::call_store::open(path, static_cast<std::size_t>(calls.store_queue));
    if (!store) return tl::unexpected(store.error());
    auto recent = (*store)->load_recent(static_cast<std::size_t>(calls.max_recent));
    if (!recent) return tl::unexpected(recent.error());
    spdlog::info("calls: {} stored call(s) loaded from {}", recent->size(), path);
    s->state_->calls->restore(std::move(*recent));
    (*store)->attach(*s->state_->calls);
    s->state_->call_store = std::move(*store);
  }
  if (!calls.webhook_url.empty()) {
    calls::webhook::options o;
    o.url = calls.webhook_url;
    o.timeout = std::chrono::milliseconds(calls.webhook_timeout_ms);
    o.retries = calls.webhook_retries;
    o.backoff = std::chrono::milliseconds(calls.webhook_backoff_ms);
    o.max_queued = static_cast<std::size_t>(calls.webhook_queue);
    o.ca_file = calls.webhook_ca_file;
    o.cert_file = calls.webhook_cert_file;
    o.key_file = calls.webhook_key_file;
    if (!calls.webhook_secret_file.empty()) {
      auto secret = calls::read_webhook_secret(calls.webhook_secret_file);
      if (!secret) return tl::unexpected(secret.error());
      o.secret = std::move(*secret);
    }
    auto hook = calls::webhook::start(*s->state_->calls, std::move(o));
    if (!hook) return tl::unexpected(hook.error());
    s->state_->webhook = std::move(*hook);
  }
  if (!cfg.tls_cert_file.empty() || !cfg.tls_key_file.empty()) {
    if (cfg.tls_cert_file.empty() || cfg.tls_key_file.empty())
      return fail(errc::invalid_config, "server.tls_cert_file and server.tls_key_file must be set together");
    auto store = tls_context_store::create(cfg);
    if (!store) return tl::unexpected(store.error());
    s->state_->tls = std::move(*store);
  }
  s->ioc_ = std::make_unique<asio::io_context>(cfg.io_threads);
  beast::error_code ec;
  const auto address = asio::ip::make_address(cfg.host, ec);
  if (ec) return fail(errc::invalid_config, "server.host = \"" + cfg.host + "\" is not an IP address");
  // The main port, then each enabled protocol port; nothing runs until every one is bound.
  const struct {
    ws_listener kind;
    bool on;
    int port;
  } wanted[] = {{ws_listener::main, true, cfg.port},
                {ws_listener::funasr, listeners.funasr, listeners.funasr_port},
                {ws_listener::sherpa, listeners.sherpa, listeners.sherpa_port},
                {ws_listener::vosk, listeners.vosk, listeners.vosk_port}};
  std::vector<std::shared_ptr<listener>> bound;
  for (const auto& w : wanted) {
    if (!w.on) continue;
    const auto name = w.kind == ws_listener::main ? std::string("server.port") : "listeners." + std::string(listener_name(w.kind)) + "_port";
    auto acceptor = bind_port(*s->ioc_, address, cfg.host, w.port, name);
    if (!acceptor) return tl::unexpected(acceptor.error());
    s->ports_.push_back({w.kind, acceptor->local_endpoint().port()});
    bound.push_back(std::make_shared<listener>(*s->ioc_, std::move(*acceptor), s->state_, w.kind));
  }
  s->port_ = s->ports_.front().port;
  if (audiosocket && audiosocket->enabled) {
    auto as = switches::audiosocket_listener::start(*s->ioc_, s->state_, *audiosocket);
    if (!as) return tl::unexpected(as.error());
    s->audiosocket_port_ = (*as)->port();
    s->audiosocket_ = std::move(*as);
  }
  for (auto& l : bound) {
    l->run();
    s->listeners_.push_back(l);
  }
  if (s->state_->tls && cfg.tls_reload_check_s > 0) {
    auto w = std::make_shared<file_watch>(
        *s->ioc_, "tls", [tls = s->state_->tls] { (void)tls->reload_if_changed(); }, cfg.tls_reload_check_s);
    w->run();
    s->tls_watch_ = w;
  }
  // A reload that revokes keys (timed, reload_keys or SIGHUP) ends their open connections.
  if (const auto& keys = s->state_->gate->keys(); keys && auth.revoke_open_streams)
    keys->on_revoked([streams = s->state_->key_streams](const std::vector<auth::key_streams::revocation>& revoked) {
      const auto n = streams->cut(revoked);
      spdlog::info("auth: {} key(s) revoked, {} open connection(s) with them ended", revoked.size(), n);
    });
  // The outcome of a timed key reload is logged by the store (a failure keeps the old keys).
  if (const auto& keys = s->state_->gate->keys(); keys && auth.keys_reload_check_s > 0) {
    auto w = std::make_shared<file_watch>(
        *s->ioc_, "auth", [keys] { (void)keys->reload_if_changed(); }, auth.keys_reload_check_s);
    w->run();
    s->keys_watch_ = w;
  }
  for (int i = 0; i < cfg.io_threads; ++i) s->threads_.emplace_back([ioc = s->ioc_.get()] { run_io(*ioc); });
  return s;
}

void server::stop() {
  if (stopped_) return;
  stopped_ = true;
  // A start() that failed before listening (bad host, unusable TLS files) left nothing running,
  // and the engine is the caller's to keep.
  if (listeners_.empty()) return;
  state_->draining = true;
  for (auto& l : listeners_) std::static_pointer_cast<listener>(l)->stop();
  const auto audiosocket = std::static_pointer_cast<switches::audiosocket_listener>(audiosocket_);
  if (audiosocket) audiosocket->stop();
  if (tls_watch_) std::static_pointer_cast<file_watch>(tls_watch_)->stop();
  if (keys_watch_) std::static_pointer_cast<file_watch>(keys_watch_)->stop();
  // Streams end through the engine's drain (their channels deliver finals, then close).
  state_->engine->shutdown();
  // Give sessions a moment to flush their last messages, then stop the I/O threads.
  auto open = [&] { return state_->connections > 0 || (audiosocket && audiosocket->connections() > 0); };
  for (int i = 0; i < 50 && open(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ioc_->stop();
  for (auto& t : threads_) t.join();
  {
    std::lock_guard lock(state_->io->mu);
    state_->io->open = false;
  }
  if (state_->call_store) state_->call_store->stop();
  if (state_->webhook) state_->webhook->stop(std::chrono::milliseconds(state_->calls_cfg.webhook_drain_ms));
}

std::optional<auth::principal> server::authenticate_key(std::string_view key) const {
  return state_->gate->authenticate_key(key);
}

result<void> server::reload_tls() {
  if (!state_->tls) return fail(errc::invalid_argument, "this server has no TLS (server.tls_cert_file is empty)");
  return state_->tls->reload();
}

result<void> server::reload_keys() {
  const auto& keys = state_->gate->keys();
  if (!keys) return fail(errc::invalid_argument, "this server has no API keys (auth.keys_file is empty)");
  auto r = keys->reload();
  if (!r) return tl::unexpected(r.error());
  return {};
}

void server::add_metrics(std::function<std::string()> source) {
  std::lock_guard lock(state_->more_metrics->mu);
  state_->more_metrics->sources.push_back(std::move(source));
}

result<void> server::reload() {
  const bool tls = state_->tls != nullptr, keys = state_->gate->keys() != nullptr;
  if (!tls && !keys)
    return fail(errc::invalid_argument, "this server has neither TLS nor API keys: nothing to reload");
  // Each independently: a broken certificate does not stop a key revocation, nor the reverse.
  std::optional<error> first;
  if (tls)
    if (auto r = reload_tls(); !r) first = r.error();
  if (keys)
    if (auto r = reload_keys(); !r && !first) first = r.error();
  if (first) return tl::unexpected(*first);
  return {};
}

server::~server() { stop(); }

config::listeners_config server::no_listeners() {
  config::listeners_config l;
  l.funasr = l.sherpa = l.vosk = false;
  return l;
}

uint16_t server::port(ws_listener l) const {
  for (const auto& p : ports_)
    if (p.listener == l) return p.port;
  return 0;
}

int server_state::max_connections(ws_listener l) const {
  switch (l) {
    case ws_listener::funasr: return listeners.funasr_max_connections;
    case ws_listener::sherpa: return listeners.sherpa_max_connections;
    case ws_listener::vosk: return listeners.vosk_max_connections;
    case ws_listener::main: break;
  }
  return cfg.max_connections;
}

}  // namespace sluice::net
