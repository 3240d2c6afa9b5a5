#include "net/ws_session.hpp"

#include <chrono>
#include <deque>
#include <optional>
#include <string>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/messages.hpp"
#include "net/funasr_replies.hpp"
#include "net/json_fields.hpp"
#include "net/result_json.hpp"
#include "net/ws_messages.hpp"

namespace sluice::net {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;

// How long the opening and closing handshakes may take.
constexpr auto handshake_timeout = std::chrono::seconds(30);

template <class Session>
caf::behavior bridge_actor(caf::event_based_actor* self, std::weak_ptr<Session> s, caf::actor supervisor);

// One template for both transports: Stream is beast::tcp_stream or
// beast::ssl_stream<beast::tcp_stream> (Beast's teardown for the latter sends TLS close_notify
// after the WebSocket close).
template <class Stream>
class session : public std::enable_shared_from_this<session<Stream>> {
  using std::enable_shared_from_this<session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<session<Stream>>::weak_from_this;

 public:
  session(Stream stream, std::shared_ptr<server_state> st, ws_dialect dialect, std::shared_ptr<void> slot, uint64_t id)
      : ws_(std::move(stream)), st_(std::move(st)), dialect_(dialect), slot_(std::move(slot)), id_(id),
        session_timer_(ws_.get_executor()), idle_timer_(ws_.get_executor()) {}

  ~session() {
    if (bridge_) caf::anon_send_exit(bridge_, caf::exit_reason::user_shutdown);
  }

  void run(http::request<http::string_body> req) {
    // Idle connections are timed by idle_timer_, which says why before it closes; Beast's own
    // idle timeout would drop the TCP connection without a close frame.
    ws_.set_option(websocket::stream_base::timeout{handshake_timeout, websocket::stream_base::none(), false});
    ws_.read_message_max(static_cast<std::size_t>(st_->cfg.max_message_bytes));
    // FunASR's clients ask for the "binary" subprotocol: it is granted when asked for.
    const bool binary_protocol = req[http::field::sec_websocket_protocol].find("binary") != beast::string_view::npos;
    ws_.set_option(websocket::stream_base::decorator([binary_protocol](websocket::response_type& res) {
      res.set(http::field::server, "sluice");
      if (binary_protocol) res.set(http::field::sec_websocket_protocol, "binary");
    }));
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
      self->guarded("accept", [&] { self->on_accept(ec); });
    });
  }

  /// Runs `f` (a handler's body) so that nothing it throws leaves the handler: the exception
  /// is logged with the session id and fails this session only.
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

  void set_tenant(std::string tenant) { tenant_ = std::move(tenant); }

  // -- called on the strand by the bridge ----------------------------------------------------
  void on_open(const actors::open_reply& r) {
    if (closing_) {
      // The client left while its channel was being opened: stop the channel at once.
      if (r.ok) caf::anon_send(r.handle, actors::abort_atom::value);
      return;
    }
    if (!r.ok) {
      const bool full = r.reason.find("full") != std::string::npos || r.reason.find("overloaded") != std::string::npos ||
                        r.reason.find("shutting down") != std::string::npos;
      fail(full ? "overloaded" : "bad_request", r.reason,
           full ? websocket::close_code::try_again_later : websocket::close_code::unknown_data);
      return;
    }
    channel_ = r.handle;
    state_ = state::streaming;
    ++st_->ws_sessions;
    counted_ = true;
    for (auto& b : early_audio_) caf::anon_send(channel_, actors::audio_atom::value, std::move(b));
    early_audio_.clear();
    if (end_requested_) end_stream();
    if (dialect_ == ws_dialect::sluice) send(json{{"type", "ready"}, {"channel", r.channel}});
  }

  void on_event(const actors::transcript_event& ev) {
    if (closing_) return;
    if (!ev.error.empty()) {
      send(json{{"type", "error"}, {"code", ev.utterance < 0 ? "audio" : "utterance_lost"}, {"reason", ev.error}});
      return;
    }
    if (dialect_ == ws_dialect::funasr) {
      if (auto reply = funasr_->on_event(ev)) send(*reply);
      return;
    }
    send(result_json(ev));
  }

  // The channel or the bridge failed (an actor exited with an error): the stream cannot go on.
  void on_channel_lost(const std::string& why) {
    channel_ = nullptr;
    if (closing_) return;
    spdlog::warn("ws {}: {}", id_, why);
    fail("internal", why, websocket::close_code::internal_error);
  }

  void on_drained() {
    channel_ = nullptr;  // the channel has stopped by itself
    if (closing_) return;
    send(dialect_ == ws_dialect::sluice ? json{{"type", "end"}} : funasr_->last());
    close(websocket::close_code::normal, "done");
  }

  asio::any_io_executor executor() { return ws_.get_executor(); }

 private:
  enum class state { awaiting_start, opening, streaming, ending };

  void on_accept(beast::error_code ec) {
    if (ec) return;
    session_timer_.expires_after(std::chrono::seconds(st_->cfg.max_session_s));
    session_timer_.async_wait([w = weak_from_this()](beast::error_code e) {
      if (auto s = w.lock(); s && !e)
        s->guarded("session timer", [&] {
          if (s->state_ != state::ending) return s->end_stream();
          // Already ending and still not drained a whole max_session_s later: give up.
          s->fail("timeout", "the stream outlived server.max_session_s", websocket::close_code::going_away);
        });
    });
    do_read();
  }

  void do_read() {
    arm_idle_timer();
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("read", [&] { self->on_read(ec); });
    });
  }

  // A client that sends nothing for server.idle_timeout_s is told so, then closed. A client
  // that has sent its end is waiting for finals, not idle.
  void arm_idle_timer() {
    if (state_ == state::ending) return;
    // The generation tells a stale expiry (one already queued when a message came in, which
    // cancel() cannot take back) from a real one.
    const uint64_t generation = ++idle_generation_;
    idle_timer_.expires_after(std::chrono::seconds(st_->cfg.idle_timeout_s));
    idle_timer_.async_wait([w = weak_from_this(), generation](beast::error_code e) {
      auto s = w.lock();
      if (!s || e) return;
      s->guarded("idle timer", [&] {
        if (generation != s->idle_generation_ || s->closing_ || s->state_ == state::ending) return;
        s->fail("idle", "no message for " + std::to_string(s->st_->cfg.idle_timeout_s) + " s (server.idle_timeout_s)",
                websocket::close_code::going_away);
      });
    });
  }

  void on_read(beast::error_code ec) {
    ++idle_generation_;
    idle_timer_.cancel();
    if (ec) {
      if (ec == websocket::error::message_too_big) {
        // Beast has already answered with close code 1009 (too big); nothing more can be sent.
        spdlog::info("ws {}: message larger than {} bytes: closed with 1009", id_, st_->cfg.max_message_bytes);
        gone();
        // Keep reading until the client's own close arrives, so it gets to read ours.
        buffer_.consume(buffer_.size());
        ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code, std::size_t) {});
        return;
      }
      // A close frame (Beast has answered it), a reset or an end of stream: the client is gone.
      // RFC 6455 5.5.1: nothing may follow our answer to its close, so results are undeliverable.
      if (!closing_) spdlog::info("ws {}: client left ({})", id_, ec.message());
      gone();
      return;
    }
    if (closing_) return;
    if (ws_.got_text()) on_text(beast::buffers_to_string(buffer_.data()));
    else on_binary();
    buffer_.consume(buffer_.size());
    if (closing_) return;
    if (state_ == state::ending || end_requested_) watch_after_end();
    else do_read();
  }

  // After the client's end it has nothing more to say; it may even shut down its half of the
  // TCP connection (a half-close), and still read its finals. A WebSocket read would fail at
  // that end of stream and, with Beast, fail the whole stream; so the socket is watched instead:
  // an end of stream is the half-close (finals still go out), a reset means the client is gone,
  // and anything else (its close frame, more messages) goes back to the WebSocket reader.
  void watch_after_end() {
    beast::get_lowest_layer(ws_).socket().async_wait(
        asio::socket_base::wait_read, [self = shared_from_this()](beast::error_code ec) {
          self->guarded("watch", [&] { self->on_readable(ec); });
        });
  }

  void on_readable(beast::error_code ec) {
    if (closing_ || ec == asio::error::operation_aborted) return;
    char byte = 0;
    auto& socket = beast::get_lowest_layer(ws_).socket();
    // Non-blocking, so that a spurious wake-up cannot block the strand in receive().
    if (!ec) socket.non_blocking(true, ec);
    if (!ec) socket.receive(asio::buffer(&byte, 1), asio::socket_base::message_peek, ec);
    if (ec == asio::error::would_block) {
      watch_after_end();
      return;
    }
    if (ec == asio::error::eof) {
      // No read is pending from now on, so nothing else keeps the session alive until its
      // finals are out: it holds itself until gone() (the close, a failed write, or the
      // session timer).
      spdlog::info("ws {}: the client half-closed after its end; its finals still go out", id_);
      keep_alive_ = shared_from_this();
      return;
    }
    if (ec) {
      spdlog::info("ws {}: client left ({})", id_, ec.message());
      gone();
      return;
    }
    do_read();
  }

  void on_text(const std::string& text) {
    if (state_ == state::awaiting_start) {
      start(text);
      return;
    }
    const auto end = dialect_ == ws_dialect::sluice ? parse_sluice_end(text) : parse_funasr_end(text);
    if (end) {
      end_stream();
      return;
    }
    const bool not_json = end.error().code == errc::corrupt;
    fail(not_json ? "bad_json" : "protocol", end.error().message, websocket::close_code::policy_error);
  }

  void on_binary() {
    if (state_ == state::awaiting_start) {
      fail("protocol", "binary audio before the start message", websocket::close_code::policy_error);
      return;
    }
    if (state_ == state::ending || end_requested_) return;  // audio after the end: ignored
    auto data = buffer_.data();
    std::vector<uint8_t> bytes(asio::buffer_size(data));
    asio::buffer_copy(asio::buffer(bytes), data);
    if (state_ == state::opening) early_audio_.push_back(std::move(bytes));
    else caf::anon_send(channel_, actors::audio_atom::value, std::move(bytes));
  }

  void start(const std::string& text) {
    actors::channel_request req;
    if (dialect_ == ws_dialect::sluice) {
      auto r = parse_sluice_start(text);
      if (!r) return refuse_start(r.error());
      req = std::move(*r);
    } else {
      auto r = parse_funasr_start(text);
      if (!r) return refuse_start(r.error());
      req = std::move(r->request);
      end_requested_ = r->end_requested;
      funasr_.emplace(std::move(r->mode), std::move(r->wav_name), r->itn);
    }
    if (!tenant_.empty()) req.tenant = tenant_;  // auth: the key's tenant wins over the start message's
    state_ = state::opening;
    bridge_ = st_->engine->system().spawn(bridge_actor<session>, weak_from_this(), st_->engine->supervisor());
    caf::anon_send(bridge_, actors::open_atom::value, req);
  }

  void refuse_start(const error& e) {
    if (e.code == errc::corrupt) fail("bad_json", e.message, websocket::close_code::policy_error);
    else fail("bad_request", e.message, websocket::close_code::unknown_data);
  }

  void end_stream() {
    if (state_ == state::streaming) {
      caf::anon_send(channel_, actors::end_atom::value);
      state_ = state::ending;
    } else if (state_ == state::opening) {
      end_requested_ = true;
    } else if (state_ == state::awaiting_start) {
      close(websocket::close_code::normal, "no stream");
    }
  }

  // No result of the channel can reach the client any more: stop it, so that the engine
  // spends nothing more on it (a drained channel has stopped already).
  void abort_channel() {
    if (channel_) caf::anon_send(channel_, actors::abort_atom::value);
    channel_ = nullptr;
  }

  void gone() {
    keep_alive_.reset();  // the last reference may be the handler's that called this
    closing_ = true;
    session_timer_.cancel();
    idle_timer_.cancel();
    abort_channel();
    if (counted_) {
      --st_->ws_sessions;
      counted_ = false;
    }
    state_ = state::ending;
  }

  void fail(const std::string& code, const std::string& reason, websocket::close_code cc) {
    spdlog::info("ws {}: {}: {}", id_, code, reason);
    send(json{{"type", "error"}, {"code", code}, {"reason", reason}});
    close(cc, code);
  }

  void internal_error(const char* where, const char* what) noexcept {
    spdlog::error("ws {}: {} handler threw: {}; ending this session", id_, where, what);
    try {
      abort_channel();
      if (!close_pending_) fail("internal", "internal server error", websocket::close_code::internal_error);
    } catch (...) {
      // Even the error could not be sent: drop the connection (the close frame is lost).
      beast::error_code ignored;
      beast::get_lowest_layer(ws_).socket().close(ignored);
    }
  }

  void send(const json& j) {
    queue_.push_back(to_wire(j));
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
      if (!closing_) spdlog::info("ws {}: write failed, client gone ({})", id_, ec.message());
      gone();
      return;
    }
    queue_.pop_front();
    if (!queue_.empty()) do_write();
    else if (close_pending_) do_close();
  }

  void close(websocket::close_code cc, const std::string& reason) {
    if (close_pending_) return;
    // Our close frame ends what we may send (RFC 6455 5.5.1): results after it are lost.
    abort_channel();
    closing_ = true;
    close_pending_ = true;
    idle_timer_.cancel();
    close_reason_ = websocket::close_reason(cc, close_reason_text(reason));
    if (queue_.empty()) do_close();
  }

  void do_close() {
    session_timer_.cancel();
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) {
      self->guarded("close", [&] { self->gone(); });
    });
  }

  websocket::stream<Stream> ws_;
  beast::flat_buffer buffer_;
  std::shared_ptr<server_state> st_;
  ws_dialect dialect_;
  std::shared_ptr<void> slot_;
  uint64_t id_;
  asio::steady_timer session_timer_, idle_timer_;
  std::deque<std::string> queue_;
  state state_ = state::awaiting_start;
  bool closing_ = false, close_pending_ = false, end_requested_ = false, counted_ = false;
  websocket::close_reason close_reason_;
  caf::actor channel_, bridge_;
  std::vector<std::vector<uint8_t>> early_audio_;
  std::optional<funasr_replies> funasr_;
  std::shared_ptr<session> keep_alive_;  ///< set while half-closed (see on_readable)
  std::string tenant_;  // auth: the admitted key's tenant; empty without keys
  uint64_t idle_generation_ = 0;         ///< see arm_idle_timer
};

// Posts `f` onto the session's strand, guarded there. Never throws into the actor.
template <class Session, class F>
void post_to(const std::weak_ptr<Session>& w, const char* where, F f) noexcept {
  try {
    if (auto s = w.lock())
      asio::post(s->executor(), [s, where, f = std::move(f)]() mutable { s->guarded(where, [&] { f(*s); }); });
  } catch (const std::exception& e) {
    spdlog::error("ws bridge: could not post {} to its session: {}", where, e.what());
  }
}

template <class Session>
caf::behavior bridge_actor(caf::event_based_actor* self, std::weak_ptr<Session> w, caf::actor supervisor) {
  using session = Session;
  // CAF already keeps a throwing handler inside this actor (it exits with an error); the
  // session is told, instead of waiting for events that will not come.
  self->set_exception_handler([w](caf::scheduled_actor*, std::exception_ptr&) -> caf::error {
    post_to(w, "bridge failure", [](session& s) { s.on_channel_lost("the stream's bridge actor failed"); });
    return caf::make_error(caf::exit_reason::unhandled_exception);
  });
  // A channel stops normally after its drain or an abort; any other exit ends the stream.
  self->set_down_handler([w](caf::down_msg& dm) {
    if (!dm.reason || dm.reason == caf::exit_reason::normal) return;
    post_to(w, "channel failure", [](session& s) { s.on_channel_lost("the stream's channel failed"); });
  });
  return {
      [=](actors::open_atom, actors::channel_request& req) {
        self->request(supervisor, std::chrono::seconds(10), actors::open_atom::value, req,
                      caf::actor_cast<caf::actor>(self))
            .then([=](actors::open_reply& r) {
                    if (r.ok) self->monitor(r.handle);
                    post_to(w, "open", [r](session& s) { s.on_open(r); });
                  },
                  [=](caf::error& e) {
                    actors::open_reply r{false, "the engine did not answer: " + self->system().render(e), 0, {}};
                    post_to(w, "open", [r](session& s) { s.on_open(r); });
                  });
      },
      [=](actors::transcript_event& ev) { post_to(w, "event", [ev](session& s) { s.on_event(ev); }); },
      [=](actors::drained_atom, actors::channel_id) {
        post_to(w, "drained", [](session& s) { s.on_drained(); });
        self->quit();
      },
  };
}

template <class Stream>
void start_session(Stream stream, http::request<http::string_body> req, std::shared_ptr<server_state> st,
                   ws_dialect dialect, std::shared_ptr<void> slot, uint64_t id, auth::principal who) {
  auto s = std::make_shared<session<Stream>>(std::move(stream), std::move(st), dialect, std::move(slot), id);
  s->set_tenant(std::move(who.tenant));  // auth: the stream's channel carries its tenant
  s->run(std::move(req));
}

}  // namespace

void run_ws_session(beast::tcp_stream stream, http::request<http::string_body> req, std::shared_ptr<server_state> st,
                    ws_dialect dialect, std::shared_ptr<void> slot, uint64_t id, auth::principal who) {
  start_session(std::move(stream), std::move(req), std::move(st), dialect, std::move(slot), id, std::move(who));
}

void run_ws_session(beast::ssl_stream<beast::tcp_stream> stream, http::request<http::string_body> req,
                    std::shared_ptr<server_state> st, ws_dialect dialect, std::shared_ptr<void> slot, uint64_t id,
                    auth::principal who) {
  start_session(std::move(stream), std::move(req), std::move(st), dialect, std::move(slot), id, std::move(who));
}

}  // namespace sluice::net
