#include "net/switches/switch_ws_session.hpp"

#include <chrono>
#include <deque>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <spdlog/spdlog.h>

#include "net/key_revocation.hpp"
#include "net/switches/call_channels.hpp"

namespace sluice::net::switches {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;

// How long the opening and closing handshakes may take.
constexpr auto handshake_timeout = std::chrono::seconds(30);
// Close reasons are at most 123 bytes (RFC 6455 5.5: a control frame's payload is at most 125).
constexpr std::size_t max_close_reason = 120;

// The first subprotocol the switch offers, echoed: mod_audio_fork and jambonz offer theirs
// (audio.drachtio.org, audio.jambonz.org) and expect it granted.
std::string first_subprotocol(const upgrade_request& req) {
  std::string offered(req[http::field::sec_websocket_protocol]);
  offered = offered.substr(0, offered.find(','));
  const auto b = offered.find_first_not_of(' ');
  const auto e = offered.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : offered.substr(b, e - b + 1);
}

template <class Stream>
class session : public std::enable_shared_from_this<session<Stream>> {
  using std::enable_shared_from_this<session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<session<Stream>>::weak_from_this;

 public:
  session(Stream stream, std::shared_ptr<server_state> st, std::unique_ptr<switch_protocol> protocol,
          std::shared_ptr<void> slot, uint64_t id, std::string tenant)
      : ws_(std::move(stream)), st_(std::move(st)), protocol_(std::move(protocol)), slot_(std::move(slot)), id_(id),
        tenant_(std::move(tenant)), session_timer_(ws_.get_executor()), idle_timer_(ws_.get_executor()) {}

  /// Posted to the strand when the call's API key is revoked (see key_revoked).
  void on_key_revoked() {
    guarded("key revoked", [&] { key_revoked(); });
  }
  asio::any_io_executor executor() { return ws_.get_executor(); }
  /// Registered with the server's key_streams while the session lives.
  std::shared_ptr<void> enrolment;

  void run(upgrade_request req) {
    ws_.set_option(websocket::stream_base::timeout{handshake_timeout, websocket::stream_base::none(), false});
    ws_.read_message_max(static_cast<std::size_t>(st_->cfg.max_message_bytes));
    const auto sub = first_subprotocol(req);
    ws_.set_option(websocket::stream_base::decorator([sub](websocket::response_type& res) {
      res.set(http::field::server, "sluice");
      if (!sub.empty()) res.set(http::field::sec_websocket_protocol, sub);
    }));
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
      self->guarded("accept", [&] {
        if (ec) return;
        self->accepted_ = true;
        if (self->revoked_) return self->key_revoked();
        self->arm_session_timer();
        self->do_read();
      });
    });
  }

 private:
  template <class F>
  void guarded(const char* where, F&& f) noexcept {
    try {
      f();
    } catch (const std::exception& e) {
      internal_error(where, e.what());
    } catch (...) {
      internal_error(where, "an exception of unknown type");
    }
  }

  void internal_error(const char* where, const char* what) noexcept {
    spdlog::error("switch {}: {} handler threw: {}; ending this connection", id_, where, what);
    try {
      if (call_) call_->abort("error: internal");
      close(websocket::close_code::internal_error, "internal error");
    } catch (...) {
      beast::error_code ignored;
      beast::get_lowest_layer(ws_).socket().close(ignored);
    }
  }

  void arm_session_timer() {
    session_timer_.expires_after(std::chrono::seconds(st_->cfg.max_session_s));
    session_timer_.async_wait([w = weak_from_this()](beast::error_code ec) {
      auto s = w.lock();
      if (!s || ec) return;
      s->guarded("session timer", [&] {
        // Past server.max_session_s: a live call is ended, one still draining is given up.
        if (s->call_ && s->call_->ended()) s->call_->abort("error: the call outlived server.max_session_s");
        else s->fail(websocket::close_code::going_away, "the call outlived server.max_session_s", "");
        s->release_if_done();
      });
    });
  }

  void arm_idle_timer() {
    const uint64_t generation = ++idle_generation_;
    idle_timer_.expires_after(std::chrono::seconds(st_->cfg.idle_timeout_s));
    idle_timer_.async_wait([w = weak_from_this(), generation](beast::error_code ec) {
      auto s = w.lock();
      if (!s || ec) return;
      s->guarded("idle timer", [&] {
        if (generation != s->idle_generation_ || s->closing_) return;
        s->fail(websocket::close_code::going_away,
                "no message for " + std::to_string(s->st_->cfg.idle_timeout_s) + " s (server.idle_timeout_s)", "");
      });
    });
  }

  void do_read() {
    arm_idle_timer();
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("read", [&] { self->on_read(ec); });
    });
  }

  void on_read(beast::error_code ec) {
    ++idle_generation_;
    idle_timer_.cancel();
    if (ec) {
      if (ec == websocket::error::message_too_big) {
        // Beast has answered with close code 1009; nothing more can be sent.
        spdlog::info("switch {}: message larger than {} bytes: closed with 1009", id_, st_->cfg.max_message_bytes);
        gone("error: a message larger than server.max_message_bytes");
        // Keep reading until the switch's own close arrives, so that it gets to read ours.
        buffer_.consume(buffer_.size());
        ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code, std::size_t) {});
        return;
      }
      if (!closing_) spdlog::info("switch {}: the switch closed ({})", id_, ec.message());
      return gone("switch closed");
    }
    if (closing_) return;
    switch_step step;
    if (ws_.got_text()) {
      step = protocol_->on_text(beast::buffers_to_string(buffer_.data()));
    } else {
      const auto data = buffer_.data();
      std::vector<uint8_t> bytes(asio::buffer_size(data));
      asio::buffer_copy(asio::buffer(bytes), data);
      step = protocol_->on_binary(bytes);
    }
    buffer_.consume(buffer_.size());
    apply(std::move(step));
    if (!closing_) do_read();
  }

  void apply(switch_step step) {
    if (step.open && !call_) open_call(std::move(*step.open));
    if (call_) {
      for (auto& a : step.audio) call_->audio(a.channel, std::move(a.bytes));
      for (auto& e : step.events) call_->event(std::move(e));
      if (step.metadata) call_->update_metadata(*step.metadata);
    }
    for (auto& r : step.replies) send(std::move(r));
    if (step.error) {
      const auto& e = *step.error;
      return fail(static_cast<websocket::close_code>(e.code), e.reason, e.reply);
    }
    if (step.end && call_) call_->end(*step.end);
  }

  void open_call(call_plan plan) {
    plan.start.tenant = tenant_;
    actors::channel_request req;
    req.codec = plan.codec;
    req.sample_rate = plan.sample_rate;
    call_channels::callbacks cb;
    const std::weak_ptr<session> w = weak_from_this();
    cb.result = [w](int index, const actors::transcript_event& ev) {
      if (auto s = w.lock(); s && !s->closing_)
        for (auto& text : s->protocol_->on_result(index, ev)) s->send(std::move(text));
    };
    cb.drained = [w] {
      auto s = w.lock();
      if (!s) return;
      if (!s->closing_) {
        auto d = s->protocol_->on_drained();
        for (auto& text : d.replies) s->send(std::move(text));
        if (d.close) s->close(websocket::close_code::normal, "done");
      }
      s->release_if_done();
    };
    cb.failed = [w](const std::string& why, actors::refusal code, bool limit) {
      auto s = w.lock();
      if (!s) return;
      // A limit the switch broke (too fast): 1008. The engine's refusal: 1013 when retrying may
      // help, 1011 otherwise, as before.
      s->fail(limit                     ? websocket::close_code::policy_error
              : actors::retryable(code) ? websocket::close_code::try_again_later
                                        : websocket::close_code::internal_error,
              why, "");
      s->release_if_done();
    };
    call_ = call_channels::open(st_, ws_.get_executor(), std::move(plan.start), req, std::move(cb), id_);
  }

  // The switch is gone: nothing more can be sent, but the call's audio is still transcribed for
  // the registry; the session holds itself until the call is done.
  void gone(const std::string& reason) {
    closing_ = true;
    socket_done_ = true;
    idle_timer_.cancel();
    if (call_ && !call_->ended()) call_->end(reason);
    release_if_done();
  }

  // The key this call was opened with was revoked ([auth] revoke_open_streams): the call stops
  // at once (audio not yet transcribed is dropped) and the switch is closed with 1008.
  void key_revoked() {
    if (closing_) return;
    // Before the handshake is done nothing can be sent: the accept acts on it.
    if (!accepted_) {
      revoked_ = true;
      return;
    }
    spdlog::info("switch {}: the API key of this call was revoked", id_);
    if (call_ && !call_->ended()) call_->abort("error: key_revoked");
    close(websocket::close_code::policy_error, "key_revoked: the API key of this call was revoked");
  }
  // The switch broke the protocol (or the call cannot go on): its error message, then the close.
  void fail(websocket::close_code code, const std::string& reason, const std::string& reply) {
    if (closing_) return;
    spdlog::info("switch {}: {}", id_, reason);
    if (!reply.empty()) send(reply);
    if (call_ && !call_->ended()) call_->end("error: " + reason);
    close(code, reason);
  }

  void send(std::string text) {
    if (close_pending_) return;
    queue_.push_back(std::move(text));
    if (queue_.size() == 1) do_write();
  }

  void do_write() {
    ws_.text(true);
    ws_.async_write(asio::buffer(queue_.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("write", [&] { self->on_write(ec); });
    });
  }

  void on_write(beast::error_code ec) {
    if (ec) {
      if (!closing_) spdlog::info("switch {}: write failed, the switch is gone ({})", id_, ec.message());
      return gone("switch closed");
    }
    queue_.pop_front();
    if (!queue_.empty()) do_write();
    else if (close_pending_) do_close();
  }

  void close(websocket::close_code code, const std::string& reason) {
    if (close_pending_) return;
    closing_ = true;
    close_pending_ = true;
    idle_timer_.cancel();
    close_reason_ = websocket::close_reason(code, reason.substr(0, max_close_reason));
    keep_alive_ = shared_from_this();  // the read may end before the close handshake does
    if (queue_.empty()) do_close();
  }

  void do_close() {
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) {
      self->guarded("close", [&] {
        self->socket_done_ = true;
        self->release_if_done();
      });
    });
  }

  // Lets the session go once the connection is over and the call is done.
  void release_if_done() {
    if (!socket_done_ || (call_ && !call_->done())) {
      if (!keep_alive_) keep_alive_ = shared_from_this();
      return;
    }
    session_timer_.cancel();
    idle_timer_.cancel();
    keep_alive_.reset();  // the last reference may be the handler's that called this
  }

  websocket::stream<Stream> ws_;
  beast::flat_buffer buffer_;
  std::shared_ptr<server_state> st_;
  std::unique_ptr<switch_protocol> protocol_;
  std::shared_ptr<void> slot_;
  uint64_t id_;
  std::string tenant_;
  asio::steady_timer session_timer_, idle_timer_;
  uint64_t idle_generation_ = 0;
  std::deque<std::string> queue_;
  std::shared_ptr<call_channels> call_;
  std::shared_ptr<session> keep_alive_;
  websocket::close_reason close_reason_;
  bool closing_ = false, close_pending_ = false, socket_done_ = false;
  bool accepted_ = false, revoked_ = false;  // the handshake is done; the key was revoked before it
};

template <class Stream>
void start(Stream stream, upgrade_request req, std::shared_ptr<server_state> st, std::unique_ptr<switch_protocol> p,
           std::shared_ptr<void> slot, uint64_t id, auth::principal who) {
  spdlog::info("switch {}: {} connection", id, p->source());
  const auto& server = *st;
  auto s = std::make_shared<session<Stream>>(std::move(stream), std::move(st), std::move(p), std::move(slot), id,
                                             who.tenant);
  s->enrolment = enrol_for_revocation(server, who, auth::scope::stream, s);
  s->run(std::move(req));
}

}  // namespace

void run_switch_session(beast::tcp_stream stream, upgrade_request req, std::shared_ptr<server_state> st,
                        std::unique_ptr<switch_protocol> protocol, std::shared_ptr<void> slot, uint64_t id,
                        auth::principal who) {
  start(std::move(stream), std::move(req), std::move(st), std::move(protocol), std::move(slot), id, std::move(who));
}

void run_switch_session(beast::ssl_stream<beast::tcp_stream> stream, upgrade_request req,
                        std::shared_ptr<server_state> st, std::unique_ptr<switch_protocol> protocol,
                        std::shared_ptr<void> slot, uint64_t id, auth::principal who) {
  start(std::move(stream), std::move(req), std::move(st), std::move(protocol), std::move(slot), id, std::move(who));
}

}  // namespace sluice::net::switches
