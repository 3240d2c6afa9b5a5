#include "net/switches/audiosocket_listener.hpp"

#include <array>
#include <cstdio>
#include <atomic>
#include <chrono>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <spdlog/spdlog.h>

#include "net/source_filter.hpp"
#include "net/switches/audiosocket_frame.hpp"
#include "net/switches/call_channels.hpp"

namespace sluice::net::switches {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// What the single channel of an AudioSocket call is: the audio Asterisk reads from the channel
// that runs AudioSocket() (the caller, in the usual dialplan).
constexpr const char* channel_label = "caller";
// Bytes read per read while draining a connection after our error message (see drain()).
constexpr std::size_t drain_chunk_bytes = 4096;

std::string hex_byte(uint8_t b) {
  char buf[sizeof "0xff"];
  std::snprintf(buf, sizeof buf, "0x%02x", b);
  return buf;
}

class session : public std::enable_shared_from_this<session> {
 public:
  // `tenant`: whose call this is (audiosocket.tenant_sources for its address, else .tenant).
  session(tcp::socket socket, std::shared_ptr<server_state> st, const config::audiosocket_config& cfg,
          std::string tenant, std::shared_ptr<void> slot, uint64_t id)
      : stream_(std::move(socket)), st_(std::move(st)), cfg_(cfg), tenant_(std::move(tenant)),
        slot_(std::move(slot)), id_(id), call_timer_(stream_.get_executor()), idle_timer_(stream_.get_executor()) {}

  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->guarded("start", [&] {
        beast::error_code ec;
        const auto remote = self->stream_.socket().remote_endpoint(ec);
        if (!ec) self->remote_ = remote.address().to_string() + ":" + std::to_string(remote.port());
        spdlog::info("audiosocket {}: connection from {}", self->id_, self->remote_);
        self->arm_call_timer();
        self->read_header();
      });
    });
  }

  // Refuses a connection (over the limit, or from an address not allowed): one error message,
  // then the close.
  void refuse(const std::string& why) {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this(), why] {
      self->guarded("refuse", [&] { self->fail(why); });
    });
  }

 private:
  enum class state { awaiting_uuid, identified, in_call, ending, closing };

  template <class F>
  void guarded(const char* where, F&& f) noexcept {
    try {
      f();
    } catch (const std::exception& e) {
      spdlog::error("audiosocket {}: {} handler threw: {}; ending this connection", id_, where, e.what());
      close_now();
    } catch (...) {
      spdlog::error("audiosocket {}: {} handler threw an exception of unknown type; ending this connection", id_, where);
      close_now();
    }
  }

  void arm_call_timer() {
    call_timer_.expires_after(std::chrono::seconds(cfg_.max_call_s));
    call_timer_.async_wait([w = weak_from_this()](beast::error_code ec) {
      auto s = w.lock();
      if (!s || ec) return;
      s->guarded("call timer", [&] {
        if (s->state_ == state::ending || s->state_ == state::closing) {
          // Still not drained a whole max_call_s after its end: give up on the finals.
          if (s->call_) s->call_->abort("error: the call outlived audiosocket.max_call_s");
          s->release_if_done();
          return;
        }
        s->fail("the call outlived audiosocket.max_call_s (" + std::to_string(s->cfg_.max_call_s) + " s)");
      });
    });
  }

  // A client that sends nothing for idle_timeout_s is told so, then closed; a client that does
  // not close after our error message is closed after as long. (Beast's own timeouts would
  // close the socket before the message could be sent.)
  void arm_idle_timer() {
    // The generation tells a stale expiry (already queued when a message came in) from a real one.
    const uint64_t generation = ++idle_generation_;
    idle_timer_.expires_after(std::chrono::seconds(cfg_.idle_timeout_s));
    idle_timer_.async_wait([w = weak_from_this(), generation](beast::error_code ec) {
      auto s = w.lock();
      if (!s || ec) return;
      s->guarded("idle timer", [&] {
        if (generation != s->idle_generation_ || s->socket_closed_ || s->state_ == state::ending) return;
        if (s->state_ == state::closing) return s->close_now();
        s->fail("no message for " + std::to_string(s->cfg_.idle_timeout_s) + " s (audiosocket.idle_timeout_s)");
      });
    });
  }

  void read_header() {
    arm_idle_timer();
    read_pending_ = true;
    asio::async_read(stream_, asio::buffer(header_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("read", [&] { self->on_header(ec); });
    });
  }

  // A read that completes after fail() has nothing to deliver: it goes on as the drain.
  bool read_done_while_closing(beast::error_code ec) {
    read_pending_ = false;
    if (state_ == state::ending) return true;
    if (state_ != state::closing) return false;
    if (ec) close_now();
    else drain();
    return true;
  }

  void on_header(beast::error_code ec) {
    if (read_done_while_closing(ec)) return;
    if (ec) return on_read_error(ec, false);
    const auto h = parse_audiosocket_header(header_.data());
    kind_ = h.kind;
    payload_.resize(h.length);
    if (h.length == 0) return on_message();
    arm_idle_timer();
    read_pending_ = true;
    asio::async_read(stream_, asio::buffer(payload_), [self = shared_from_this()](beast::error_code e, std::size_t) {
      self->guarded("read", [&] {
        if (self->read_done_while_closing(e)) return;
        if (e) return self->on_read_error(e, true);
        self->on_message();
      });
    });
  }

  void on_read_error(beast::error_code ec, bool inside_message) {
    // The socket's closure is a hangup (the protocol says so); one that cuts a message short
    // is logged, and what came before it still counts.
    if (inside_message) spdlog::info("audiosocket {}: the connection closed inside a message ({})", id_, ec.message());
    else spdlog::info("audiosocket {}: the connection closed ({})", id_, ec.message());
    end_call(inside_message ? "connection closed inside a message" : "connection closed", true);
  }

  void on_message() {
    const auto kind = static_cast<audiosocket_kind>(kind_);
    if (kind == audiosocket_kind::uuid) return on_uuid();
    if (kind == audiosocket_kind::hangup) return end_call("hangup", false);
    if (kind == audiosocket_kind::error) {
      const std::string code = payload_.empty() ? "none" : hex_byte(payload_.front());
      spdlog::info("audiosocket {}: Asterisk reported an error (code {})", id_, code);
      return end_call("error from Asterisk (code " + code + ")", false);
    }
    if (!known_audiosocket_kind(kind_)) return fail("unknown message kind " + hex_byte(kind_));
    if (state_ == state::awaiting_uuid) return fail("the first message must be the UUID (kind 0x01), not " + hex_byte(kind_));
    if (kind == audiosocket_kind::dtmf) return on_dtmf();
    on_audio(*audiosocket_sample_rate(kind_));
  }

  void on_uuid() {
    if (state_ != state::awaiting_uuid) return fail("a second UUID message");
    if (payload_.size() != audiosocket_uuid_bytes)
      return fail("the UUID message has " + std::to_string(payload_.size()) + " bytes, not 16");
    uuid_ = format_uuid(payload_.data());
    state_ = state::identified;
    spdlog::info("audiosocket {}: call {}", id_, uuid_);
    read_header();
  }

  void on_dtmf() {
    if (payload_.size() != 1) return fail("a DTMF message has " + std::to_string(payload_.size()) + " bytes, not 1");
    const char digit = static_cast<char>(payload_.front());
    if (!valid_dtmf_digit(digit)) return fail("DTMF digit " + hex_byte(payload_.front()) + " is not 0-9, *, #, A-D");
    calls::call_event ev;
    ev.type = "dtmf";
    ev.data = {{"digit", std::string(1, digit)}};
    if (call_) call_->event(std::move(ev));
    else if (early_events_.size() >= max_dtmf_before_audio)
      return fail("more than " + std::to_string(max_dtmf_before_audio) + " DTMF messages before the first audio");
    else early_events_.push_back(std::move(ev));
    read_header();
  }

  void on_audio(int rate) {
    if (!call_) open_call(rate);
    else if (rate != rate_)
      return fail("the audio rate changed from " + std::to_string(rate_) + " to " + std::to_string(rate) +
                  " Hz during the call");
    if (call_) call_->audio(0, std::move(payload_));
    payload_ = {};
    // The audio may have failed the call at once (server.switch_max_speed): the error frame is
    // on its way and the close drains the connection.
    if (state_ == state::closing) return;
    read_header();
  }

  void open_call(int rate) {
    rate_ = rate;
    calls::call_start start;
    start.source = "audiosocket";
    start.tenant = tenant_;
    start.external_id = uuid_;
    start.channel_labels = {channel_label};
    start.metadata = {{"uuid", uuid_}, {"sample_rate", rate}, {"remote", remote_}};
    actors::channel_request req;
    req.sample_rate = rate;
    req.codec = "pcm_s16le";
    call_channels::callbacks cb;
    const std::weak_ptr<session> w = weak_from_this();
    cb.drained = [w] {
      if (auto s = w.lock()) s->on_call_done();
    };
    // The call is over already (refused or failed): the error goes out, then the close
    // releases the session.
    cb.failed = [w](const std::string& why, actors::refusal, bool) {
      if (auto s = w.lock()) s->fail(why);
    };
    call_ = call_channels::open(st_, stream_.get_executor(), std::move(start), req, std::move(cb), id_);
    for (auto& ev : early_events_) call_->event(std::move(ev));
    early_events_.clear();
    state_ = state::in_call;
  }

  // The call is over on Asterisk's side: its audio is finished (finals still come), then the
  // connection closes.
  void end_call(const std::string& reason, bool socket_closed) {
    state_ = state::ending;
    if (socket_closed) close_now();
    if (call_) {
      keep_alive_ = shared_from_this();  // no read is pending: hold on until the call drains
      call_->end(reason);
    } else {
      close_now();
    }
  }

  void on_call_done() {
    close_now();
    release_if_done();
  }

  // One clear error message to this client, then the close; a call in progress ends (its audio
  // so far is still transcribed) with the reason.
  void fail(const std::string& why) {
    if (state_ == state::closing) return;
    spdlog::info("audiosocket {}: {}", id_, why);
    if (call_ && !call_->ended()) {
      keep_alive_ = shared_from_this();
      call_->end("error: " + why);
    }
    state_ = state::closing;
    if (socket_closed_) return release_if_done();
    error_ = make_audiosocket_error(why);
    // A read may be pending (the call timer, a refused channel): it becomes the drain when it
    // completes (read_done_while_closing); one read and one write may be outstanding at once.
    arm_idle_timer();
    asio::async_write(stream_, asio::buffer(error_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("write", [&] {
        if (ec) return self->close_now();
        beast::error_code ignored;
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        if (!self->read_pending_) self->drain();
      });
    });
  }

  // Reads what the client still sends until it closes (or the idle timeout): closing a socket
  // with unread bytes sends a reset, which can make the client lose our error message.
  void drain() {
    if (socket_closed_) return release_if_done();
    read_pending_ = true;
    stream_.async_read_some(asio::buffer(drain_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("drain", [&] {
        self->read_pending_ = false;
        if (ec) return self->close_now();
        self->drain();
      });
    });
  }

  void close_now() {
    if (socket_closed_) return release_if_done();
    socket_closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    release_if_done();
  }

  void release_if_done() {
    if (!socket_closed_ || (call_ && !call_->done())) return;
    call_timer_.cancel();
    idle_timer_.cancel();
    keep_alive_.reset();  // the last reference may be the handler's that called this
  }

  beast::tcp_stream stream_;
  std::shared_ptr<server_state> st_;
  config::audiosocket_config cfg_;
  std::string tenant_;
  std::shared_ptr<void> slot_;
  uint64_t id_;
  asio::steady_timer call_timer_, idle_timer_;
  uint64_t idle_generation_ = 0;
  std::string remote_ = "?";
  state state_ = state::awaiting_uuid;
  std::array<uint8_t, audiosocket_header_bytes> header_{};
  uint8_t kind_ = 0;
  std::vector<uint8_t> payload_, error_;
  std::array<char, drain_chunk_bytes> drain_{};
  std::string uuid_;
  int rate_ = 0;
  std::shared_ptr<call_channels> call_;
  std::vector<calls::call_event> early_events_;
  std::shared_ptr<session> keep_alive_;
  bool socket_closed_ = false, read_pending_ = false;
};

class listener_impl : public audiosocket_listener, public std::enable_shared_from_this<listener_impl> {
 public:
  listener_impl(asio::io_context& ioc, tcp::acceptor acceptor, std::shared_ptr<server_state> st,
                config::audiosocket_config cfg, source_filter allowed, tenant_sources tenants)
      : ioc_(ioc), acceptor_(std::move(acceptor)), st_(std::move(st)), cfg_(std::move(cfg)),
        allowed_(std::move(allowed)), tenants_(std::move(tenants)), port_(acceptor_.local_endpoint().port()) {}

  uint16_t port() const override { return port_; }
  int connections() const override { return *open_; }
  void run() { do_accept(); }
  void stop() override {
    asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->acceptor_.close(ec);
    });
  }

 private:
  void do_accept() {
    acceptor_.async_accept(asio::make_strand(ioc_), [self = shared_from_this()](beast::error_code ec, tcp::socket s) {
      self->on_accept(ec, std::move(s));
    });
  }

  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    try {
      if (!ec) start_session(std::move(socket));
    } catch (const std::exception& e) {
      spdlog::error("audiosocket: could not start a connection: {}", e.what());
    }
    if (acceptor_.is_open()) do_accept();
  }

  void start_session(tcp::socket socket) {
    beast::error_code ec;
    const auto remote = socket.remote_endpoint(ec);
    if (ec) {
      spdlog::info("audiosocket: a connection was gone before it could start: {}", ec.message());
      return;  // the socket closes with this frame
    }
    const uint64_t id = st_->next_connection_id++;
    if (!allowed_.allows(remote.address())) {
      ++st_->audiosocket_refused_source;
      // A stranger takes no call slot (it cannot crowd out the Asterisk servers); it is told why
      // and closed. Refusals under way are bounded too: past max_connections of them a stranger
      // is closed at once, without the message.
      if (++*refusing_ > cfg_.max_connections) {
        --*refusing_;
        spdlog::info("audiosocket {}: refused {} (not in audiosocket.allowed_sources) without a message: "
                     "{} refusals under way", id, remote.address().to_string(), cfg_.max_connections);
        return;
      }
      spdlog::info("audiosocket {}: refused: {} is not in audiosocket.allowed_sources", id, remote.address().to_string());
      std::shared_ptr<void> slot(nullptr, [refusing = refusing_](void*) { --*refusing; });
      std::make_shared<session>(std::move(socket), st_, cfg_, cfg_.tenant, std::move(slot), id)
          ->refuse("this address may not connect (audiosocket.allowed_sources)");
      return;
    }
    const int now = ++*open_;
    // The slot keeps the connection counted until its session is gone.
    std::shared_ptr<void> slot(nullptr, [open = open_](void*) { --*open; });
    auto s = std::make_shared<session>(std::move(socket), st_, cfg_, tenants_.tenant_of(remote.address(), cfg_.tenant),
                                       std::move(slot), id);
    if (now > cfg_.max_connections) {
      ++st_->audiosocket_refused_limit;
      s->refuse("too many AudioSocket connections (audiosocket.max_connections = " +
                std::to_string(cfg_.max_connections) + ")");
      return;
    }
    s->run();
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  std::shared_ptr<server_state> st_;
  config::audiosocket_config cfg_;
  source_filter allowed_;   // audiosocket.allowed_sources
  tenant_sources tenants_;  // audiosocket.tenant_sources
  uint16_t port_;
  std::shared_ptr<std::atomic<int>> open_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<int>> refusing_ = std::make_shared<std::atomic<int>>(0);  // strangers being told
};

}  // namespace

result<std::shared_ptr<audiosocket_listener>> audiosocket_listener::start(asio::io_context& ioc,
                                                                          std::shared_ptr<server_state> st,
                                                                          const config::audiosocket_config& cfg) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(cfg.host, ec);
  if (ec) return fail(errc::invalid_config, "audiosocket.host = \"" + cfg.host + "\" is not an IP address");
  auto admission = source_admission::parse("audiosocket", cfg.allowed_sources, cfg.tenant_sources, cfg.tenant);
  if (!admission) return tl::unexpected(admission.error());
  if (!address.is_loopback() && admission->allowed.empty() && !cfg.allow_public)
    return fail(errc::invalid_config, "audiosocket.host = \"" + cfg.host +
                                          "\" is not a loopback address and AudioSocket has no authentication: "
                                          "set audiosocket.allowed_sources to your Asterisk servers' addresses (or "
                                          "networks), or audiosocket.allow_public = true to take connections from anyone");
  tcp::acceptor acceptor(asio::make_strand(ioc));
  const tcp::endpoint ep{address, static_cast<unsigned short>(cfg.port)};
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return fail(errc::io, "AudioSocket cannot listen on " + cfg.host + ":" + std::to_string(cfg.port) + ": " +
                              ec.message());
  auto l = std::make_shared<listener_impl>(ioc, std::move(acceptor), std::move(st), cfg, std::move(admission->allowed),
                                          std::move(admission->tenants));
  l->run();
  spdlog::info("audiosocket: listening on {}:{}", cfg.host, l->port());
  return std::shared_ptr<audiosocket_listener>(l);
}

}  // namespace sluice::net::switches
