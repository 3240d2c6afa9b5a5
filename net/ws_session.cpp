#include "net/ws_session.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include <poll.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/channel_progress.hpp"
#include "actors/messages.hpp"
#include "net/json_fields.hpp"
#include "net/key_revocation.hpp"
#include "net/refusal_status.hpp"

namespace sluice::net {

namespace {

namespace beast = boost::beast;

namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;

// How long the opening and closing handshakes may take.
constexpr auto handshake_timeout = std::chrono::seconds(30);
// While its reads are paused (flow control) a session looks this often whether the client has
// reset the connection and whether the pause has lasted server.ws_max_pause_s.
constexpr auto pause_check_interval = std::chrono::milliseconds(100);

template <class Session>
caf::behavior bridge_actor(caf::event_based_actor* self, std::weak_ptr<Session> s,
                           std::shared_ptr<server_state::io_gate> gate, actors::supervisor_actor_type supervisor,
                           std::size_t index);

// One template for both transports: Stream is beast::tcp_stream or
// beast::ssl_stream<beast::tcp_stream> (Beast's teardown for the latter sends TLS close_notify
// after the WebSocket close). The session is the transport; the protocol is its adapter.
template <class Stream>
class session : public std::enable_shared_from_this<session<Stream>>, public ws_transport {
  using std::enable_shared_from_this<session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<session<Stream>>::weak_from_this;

 public:
  session(Stream stream, std::shared_ptr<server_state> st, std::unique_ptr<ws_protocol> proto,
          std::shared_ptr<void> slot, uint64_t id, std::string tenant)
      : ws_(std::move(stream)), st_(std::move(st)), proto_(std::move(proto)), slot_(std::move(slot)), id_(id),
        tenant_(std::move(tenant)), session_timer_(ws_.get_executor()), idle_timer_(ws_.get_executor()),
        pause_timer_(ws_.get_executor()) {}

  ~session() override {
    if (paused_) --st_->ws_paused_now;
    for (auto& c : channels_)
      if (c.bridge) caf::anon_send_exit(c.bridge, caf::exit_reason::user_shutdown);
    end_call("client left");
  }

  void run(http::request<http::string_body> req) {
    // Idle connections are timed by idle_timer_, which says why before it closes; Beast's own
    // idle timeout would drop the TCP connection without a close frame.
    ws_.set_option(websocket::stream_base::timeout{handshake_timeout, websocket::stream_base::none(), false});
    ws_.read_message_max(static_cast<std::size_t>(st_->cfg.max_message_bytes));
    // Granted only when the client offered it (FunASR's "binary", the switches' own names).
    std::string granted = proto_->accept_subprotocol(req[http::field::sec_websocket_protocol]);
    ws_.set_option(websocket::stream_base::decorator([granted](websocket::response_type& res) {
      res.set(http::field::server, "sluice");
      if (!granted.empty()) res.set(http::field::sec_websocket_protocol, granted);
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

  // -- called on the strand by the bridges ---------------------------------------------------
  void channel_opened(std::size_t i, const actors::open_reply& r) {
    auto& c = channels_.at(i);
    if (closing_) {
      // The client left while its channel was being opened: stop the channel at once.
      if (r.ok) caf::anon_send<caf::message_priority::high>(r.handle, actors::abort_atom::value);
      return;
    }
    if (!r.ok) {
      fail(ws_error_of(r.code), r.reason, ws_close_of(r.code));
      return;
    }
    c.handle = r.handle;
    c.phase = channel_phase::open;
    if (!counted_) {
      ++st_->ws_sessions;
      counted_ = true;
    }
    // Progress reports first, so that the first report counts the early audio among what follows.
    caf::anon_send(c.handle, actors::progress_atom::value);
    for (auto& b : c.early_audio) caf::anon_send(c.handle, actors::audio_atom::value, std::move(b));
    for (auto& x : c.early_samples) caf::anon_send(c.handle, actors::samples_atom::value, std::move(x));
    c.early_audio.clear();
    c.early_samples.clear();
    if (c.end_requested) end_channel(i);
    proto_->on_open(*this, i, r);
  }

  void channel_event(std::size_t i, const actors::transcript_event& ev) {
    if (closing_) return;
    if (!call_id_.empty() && ev.error.empty()) st_->calls->result(call_id_, channels_.at(i).call_channel, ev);
    proto_->on_event(*this, i, ev);
  }

  // A channel or its bridge failed (an actor exited with an error): the stream cannot go on.
  void channel_lost(std::size_t i, const std::string& why) {
    channels_.at(i).handle = nullptr;
    if (closing_) return;
    spdlog::warn("ws {}: channel {}: {}", id_, i, why);
    fail("internal", why, ws_close::internal);
  }

  void channel_drained(std::size_t i) {
    auto& c = channels_.at(i);
    c.handle = nullptr;  // the channel has stopped by itself
    c.phase = channel_phase::drained;
    c.unacked_us.clear();
    c.unacked_total_us = 0;
    c.engine_pending_ms = 0;
    if (closing_) return;
    proto_->on_drained(*this, i);
    if (!closing_) maybe_resume();
  }

  // The channel has handled `taken` of the audio messages sent to it, and holds `pending_ms`
  // of audio the recognizer has not finished with (actors/channel_progress.hpp).
  void channel_progress(std::size_t i, uint64_t taken, int64_t pending_ms, bool caught_up) {
    auto& c = channels_.at(i);
    if (closing_ || c.phase == channel_phase::drained) return;
    while (c.acked < taken && !c.unacked_us.empty()) {
      c.unacked_total_us -= c.unacked_us.front();
      c.unacked_us.pop_front();
      ++c.acked;
    }
    c.engine_pending_ms = pending_ms;
    note_buffered(c);
    maybe_resume();
    if (!closing_) proto_->on_progress(*this, i, taken, caught_up);
  }

  asio::any_io_executor executor() { return ws_.get_executor(); }

  // -- ws_transport ------------------------------------------------------------------------
  void send_text(std::string text) override { enqueue(std::move(text), true); }
  void send_binary(std::vector<uint8_t> bytes) override { enqueue(std::string(bytes.begin(), bytes.end()), false); }

  void open_channels(std::vector<actors::channel_request> requests, std::vector<int> call_channels) override {
    if (!call_channels.empty() && call_channels.size() != requests.size())
      throw std::logic_error("open_channels: one call channel per request");
    const std::size_t first = channels_.size();
    channels_.resize(first + requests.size());
    for (std::size_t k = 0; k < requests.size(); ++k) {
      const std::size_t i = first + k;
      // auth: the key's tenant wins over one the start message names (which counts only without keys)
      if (!tenant_.empty()) requests[k].tenant = tenant_;
      auto& c = channels_[i];
      c.call_channel = call_channels.empty() ? static_cast<int>(i) : call_channels[k];
      c.codec = requests[k].codec;
      c.sample_rate = requests[k].sample_rate;
      c.bridge = st_->engine->system().spawn(bridge_actor<session>, weak_from_this(), st_->io, st_->engine->supervisor(), i);
      caf::anon_send(c.bridge, actors::open_atom::value, requests[k]);
    }
  }
  std::size_t channel_count() const override { return channels_.size(); }

  void push_audio(std::size_t i, std::vector<uint8_t> bytes) override {
    auto& c = channels_.at(i);
    if (!takes_audio(c)) return;
    // A message whose duration cannot be told (a malformed Opus packet) counts as a whole
    // high-water mark: reads pause until the channel has taken it.
    account(c, actors::audio_message_us(c.codec, c.sample_rate, bytes).value_or(high_water_ms() * 1000));
    if (c.phase == channel_phase::opening) c.early_audio.push_back(std::move(bytes));
    else caf::anon_send(c.handle, actors::audio_atom::value, std::move(bytes));
  }
  void push_samples(std::size_t i, std::vector<float> samples) override {
    auto& c = channels_.at(i);
    if (!takes_audio(c)) return;
    account(c, actors::samples_message_us(samples.size(), c.sample_rate));
    if (c.phase == channel_phase::opening) c.early_samples.push_back(std::move(samples));
    else caf::anon_send(c.handle, actors::samples_atom::value, std::move(samples));
  }

  void end_channel(std::size_t i) override {
    auto& c = channels_.at(i);
    if (c.phase == channel_phase::opening) {
      c.end_requested = true;
    } else if (c.phase == channel_phase::open) {
      caf::anon_send(c.handle, actors::end_atom::value);
      c.phase = channel_phase::ending;
    }
  }

  void input_done() override {
    input_done_ = true;
    ++idle_generation_;
    idle_timer_.cancel();
  }

  void close(ws_close code, std::string_view reason) override {
    if (close_pending_) return;
    if (end_reason_.empty()) end_reason_ = code == ws_close::normal ? "done" : "closed: " + std::string(reason);
    // Our close frame ends what we may send (RFC 6455 5.5.1): results after it are lost.
    abort_channels();
    closing_ = true;
    close_pending_ = true;
    idle_timer_.cancel();
    close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), close_reason_text(reason));
    if (queue_.empty()) do_close();
  }

  void fail(std::string_view code, std::string_view reason, ws_close close_code) override {
    spdlog::info("ws {}: {}: {}", id_, code, reason);
    if (end_reason_.empty()) end_reason_ = "error: " + std::string(code) + ": " + std::string(reason);
    if (!close_pending_)
      if (auto m = proto_->error_message(code, reason)) send_text(std::move(*m));
    close(close_code, code);
  }

  void begin_call(calls::call_start start) override {
    if (!call_id_.empty()) return;
    start.tenant = tenant_;
    call_id_ = st_->calls->begin(std::move(start));
    spdlog::info("ws {}: {} call {}", id_, proto_->name(), call_id_);
  }
  void call_event(calls::call_event ev) override {
    if (!call_id_.empty()) st_->calls->event(call_id_, std::move(ev));
  }
  const calls::call_id& call() const override { return call_id_; }
  uint64_t id() const override { return id_; }
  const server_state& server() const override { return *st_; }
  const std::string& tenant() const override { return tenant_; }

  /// Posted to the strand when the stream's API key is revoked (net/key_revocation.hpp).
  void on_key_revoked() {
    guarded("key revoked", [&] { key_revoked(); });
  }
  /// The key this stream was opened with was revoked ([auth] revoke_open_streams): the client
  /// is told why and the stream ends; audio not yet transcribed is dropped.
  void key_revoked() {
    if (closing_) return;
    // Before the handshake is done nothing can be sent: on_accept acts on it.
    if (!accepted_) {
      revoked_ = true;
      return;
    }
    fail("key_revoked", "the API key of this stream was revoked", ws_close::policy);
  }
  /// Registered with the server's key_streams while the session lives.
  std::shared_ptr<void> enrolment;

 private:
  enum class channel_phase { opening, open, ending, drained };

  struct channel {
    channel_phase phase = channel_phase::opening;
    bool end_requested = false;  ///< end_channel while opening
    int call_channel = 0;        ///< where the call registry keeps its results
    actors::channel_actor_type handle;
    caf::actor bridge;
    std::vector<std::vector<uint8_t>> early_audio;  ///< pushed while opening
    std::vector<std::vector<float>> early_samples;
    // Flow control: the channel's codec and rate (to tell a message's duration), the
    // durations (us) of the audio messages sent or held that it has not taken yet, how many it
    // has taken, and the audio it last said the recognizer has not finished with.
    std::string codec;
    int sample_rate = 0;
    std::deque<int64_t> unacked_us;
    int64_t unacked_total_us = 0;
    uint64_t acked = 0;
    int64_t engine_pending_ms = 0;
  };

  struct outgoing {
    std::string data;
    bool text = true;
  };

  void on_accept(beast::error_code ec) {
    if (ec) return;
    accepted_ = true;
    if (revoked_) return key_revoked();
    arm_session_timer();
    proto_->on_start(*this);
    if (!closing_) do_read();
  }

  // At server.max_session_s the input is ended as the client's end would end it; a stream still
  // not drained a whole max_session_s after that is given up.
  void arm_session_timer() {
    session_timer_.expires_after(std::chrono::seconds(st_->cfg.max_session_s));
    session_timer_.async_wait([w = weak_from_this()](beast::error_code e) {
      if (auto s = w.lock(); s && !e)
        s->guarded("session timer", [&] {
          if (s->closing_) return;
          if (s->input_done_)
            return s->fail("timeout", "the stream outlived server.max_session_s", ws_close::going_away);
          s->proto_->on_session_limit(*s);
          if (!s->closing_) s->arm_session_timer();
        });
    });
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
    if (input_done_) return;
    // The generation tells a stale expiry (one already queued when a message came in, which
    // cancel() cannot take back) from a real one.
    const uint64_t generation = ++idle_generation_;
    idle_timer_.expires_after(std::chrono::seconds(st_->cfg.idle_timeout_s));
    idle_timer_.async_wait([w = weak_from_this(), generation](beast::error_code e) {
      auto s = w.lock();
      if (!s || e) return;
      s->guarded("idle timer", [&] {
        if (generation != s->idle_generation_ || s->closing_ || s->input_done_) return;
        s->fail("idle", "no message for " + std::to_string(s->st_->cfg.idle_timeout_s) + " s (server.idle_timeout_s)",
                ws_close::going_away);
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
        if (end_reason_.empty()) end_reason_ = "error: too_big";
        gone();
        // Keep reading until the client's own close arrives, so it gets to read ours.
        buffer_.consume(buffer_.size());
        ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code, std::size_t) {});
        return;
      }
      if (tls_half_close(ec)) return;
      // A close frame (Beast has answered it), a reset or an end of stream: the client is gone.
      // RFC 6455 5.5.1: nothing may follow our answer to its close, so results are undeliverable.
      if (!closing_) spdlog::info("ws {}: client left ({})", id_, ec.message());
      const bool answer = !closing_ && tls_peer_closed();
      gone();
      // A TLS close_notify that ends the stream is answered with ours (RFC 5246 7.2.1); while
      // our close handshake runs, its handler answers.
      if (answer) finish_tls();
      return;
    }
    if (closing_) return;
    if (ws_.got_text()) {
      proto_->on_text(*this, beast::buffers_to_string(buffer_.data()));
    } else {
      auto data = buffer_.data();
      std::vector<uint8_t> bytes(asio::buffer_size(data));
      asio::buffer_copy(asio::buffer(bytes), data);
      proto_->on_binary(*this, std::move(bytes));
    }
    buffer_.consume(buffer_.size());
    if (closing_) return;
    if (input_done_) watch_after_end();
    else if (!peer_finished_ && over_high_water()) pause_reading();
    else do_read();
  }

  // -- flow control ----------------------------------------------------------------------------
  // A stream whose audio in the server's hands (sent to its channel and not taken yet, or taken
  // and not recognized yet) reaches server.ws_max_buffered_audio_ms gets no next read: the
  // socket's receive buffer fills, TCP's window closes, and the client's writes wait. Reads go
  // on once every channel is down to half the mark. A paused reader sees no frame, so a ping or
  // a close frame waits behind the audio before it (at most ws_max_pause_s); a reset connection
  // is seen at once (pause_check), and a failed write of a result ends the session as always.
  // A client that has shut down its sending half (FIN) can send no more: what it sent is all in
  // the kernel's buffers already, so the rest is read at once, unpaused, as before flow control
  // existed: its end message (then its finals go out) or its departure is seen without delay.

  int64_t high_water_ms() const { return st_->cfg.ws_max_buffered_audio_ms; }

  static bool takes_audio(const channel& c) {
    return (c.phase == channel_phase::opening && !c.end_requested) || c.phase == channel_phase::open;
  }

  static int64_t buffered_ms(const channel& c) { return c.unacked_total_us / 1000 + c.engine_pending_ms; }

  void account(channel& c, int64_t us) {
    c.unacked_us.push_back(us);
    c.unacked_total_us += us;
    note_buffered(c);
  }

  void note_buffered(const channel& c) {
    const int64_t ms = buffered_ms(c);
    auto& peak = st_->ws_buffered_audio_peak_ms;
    int64_t seen = peak.load();
    while (ms > seen && !peak.compare_exchange_weak(seen, ms)) {
    }
  }

  bool over_high_water() const {
    for (const auto& c : channels_)
      if (c.phase != channel_phase::drained && buffered_ms(c) >= high_water_ms()) return true;
    return false;
  }

  void pause_reading() {
    paused_ = true;
    paused_since_ = std::chrono::steady_clock::now();
    ++st_->ws_read_pauses;
    ++st_->ws_paused_now;
    arm_pause_check();
  }

  void unpause() {
    if (!paused_) return;
    paused_ = false;
    --st_->ws_paused_now;
    pause_timer_.cancel();
  }

  void maybe_resume() {
    if (!paused_ || closing_) return;
    for (const auto& c : channels_)
      if (c.phase != channel_phase::drained && buffered_ms(c) > high_water_ms() / 2) return;
    unpause();
    if (input_done_) watch_after_end();
    else do_read();
  }

  // The timer holds the session: while paused no read is pending, and nothing else may be.
  void arm_pause_check() {
    pause_timer_.expires_after(pause_check_interval);
    pause_timer_.async_wait([self = shared_from_this()](beast::error_code e) {
      if (e) return;
      self->guarded("pause check", [&] { self->pause_check(); });
    });
  }

  void pause_check() {
    if (!paused_ || closing_) return;
    // POLLERR / POLLHUP: the connection was reset (a client that closed its socket with our
    // results unread, or died). POLLRDHUP: a FIN, which may be a departure or a half-close after
    // the client's end sitting unread behind its audio: which one, the rest of the stream says.
    pollfd p{beast::get_lowest_layer(ws_).socket().native_handle(), POLLRDHUP, 0};
    const bool polled = ::poll(&p, 1, 0) > 0;
    if (polled && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
      spdlog::info("ws {}: client left while its reads were paused", id_);
      gone();
      return;
    }
    if (polled && (p.revents & POLLRDHUP) != 0) {
      spdlog::info("ws {}: the client shut down its sending half while paused: reading the rest at once", id_);
      peer_finished_ = true;
      unpause();
      do_read();
      return;
    }
    if (std::chrono::steady_clock::now() - paused_since_ >= std::chrono::seconds(st_->cfg.ws_max_pause_s)) {
      unpause();
      fail("overloaded",
           "the engine did not consume this stream's audio for " + std::to_string(st_->cfg.ws_max_pause_s) +
               " s (server.ws_max_pause_s); retry later",
           ws_close::try_later);
      return;
    }
    arm_pause_check();
  }

  // After the client's end it has nothing more to say; it may even shut down its half of the
  // TCP connection (a half-close), and still read its finals. A WebSocket read would fail at
  // that end of stream and, with Beast, fail the whole stream; so the socket is watched instead:
  // an end of stream is the half-close (finals still go out), a reset means the client is gone,
  // and anything else (its close frame, more messages) goes back to the WebSocket reader.
  void watch_after_end() {
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      // What the client sent after its end may have come in the same read from the socket (the
      // TLS layer reads all it can): then it waits, still encrypted, in the read side of the
      // TLS layer, where a watch of the socket would never see it (a ping would go unanswered
      // and a close_notify unseen until our close). Read it now instead.
      SSL* ssl = ws_.next_layer().native_handle();
      if (SSL_pending(ssl) > 0 || BIO_pending(SSL_get_rbio(ssl)) > 0) return do_read();
    }
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

  // No result of the channels can reach the client any more: stop them, so that the engine
  // spends nothing more on them (a drained channel has stopped already).
  void abort_channels() {
    for (auto& c : channels_) {
      if (c.handle) caf::anon_send<caf::message_priority::high>(c.handle, actors::abort_atom::value);
      c.handle = nullptr;
    }
  }

  void end_call(const std::string& reason) {
    if (call_id_.empty() || call_ended_) return;
    call_ended_ = true;
    st_->calls->end(call_id_, end_reason_.empty() ? reason : end_reason_);
  }

  void gone() {
    keep_alive_.reset();  // the last reference may be the handler's that called this
    closing_ = true;
    unpause();
    session_timer_.cancel();
    idle_timer_.cancel();
    abort_channels();
    if (counted_) {
      --st_->ws_sessions;
      counted_ = false;
    }
    input_done_ = true;
    end_call("client left");
  }

  void internal_error(const char* where, const char* what) noexcept {
    spdlog::error("ws {}: {} handler threw: {}; ending this session", id_, where, what);
    try {
      abort_channels();
      if (!close_pending_) fail("internal", "internal server error", ws_close::internal);
    } catch (...) {
      // Even the error could not be sent: drop the connection (the close frame is lost).
      beast::error_code ignored;
      beast::get_lowest_layer(ws_).socket().close(ignored);
    }
  }

  void enqueue(std::string data, bool text) {
    if (close_pending_) return;
    queue_.push_back({std::move(data), text});
    if (queue_.size() == 1) do_write();
  }

  void do_write() {
    if (raw_frames_) return write_raw_frame(queue_.front().text ? 0x1 : 0x2, queue_.front().data);
    ws_.text(queue_.front().text);
    ws_.async_write(asio::buffer(queue_.front().data), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->guarded("write", [&] {
        // The read that took the client's TLS close_notify failed the WebSocket stream while
        // this write was in flight (tls_half_close): Beast reports it aborted, though its frame
        // went out whole when all its bytes were written. A frame it never began is written
        // again, by hand; one cut short cannot be mended.
        if (self->raw_frames_ && ec == asio::error::operation_aborted) {
          if (n == self->queue_.front().data.size() && n > 0) ec = {};
          else if (n == 0) return self->do_write();
        }
        self->on_write(ec);
      });
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

  void do_close() {
    session_timer_.cancel();
    if (raw_frames_) {
      // The close frame by hand too (code, then reason: at most 123 bytes), then our own
      // close_notify, then the socket.
      std::string payload{static_cast<char>(static_cast<uint16_t>(close_reason_.code) >> 8),
                          static_cast<char>(static_cast<uint16_t>(close_reason_.code) & 0xff)};
      payload.append(close_reason_.reason.data(), std::min<std::size_t>(close_reason_.reason.size(), 123));
      closing_frame_ = true;
      return write_raw_frame(0x8, payload);
    }
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code ec) {
      self->guarded("close", [&] {
        // Our close frame went out. Where the client's TLS close_notify came instead of its
        // close frame (it half-closed after its end: this handshake's read met it, or a read
        // before failed the stream), everything has reached it: answer with ours.
        if (ec && self->tls_peer_closed()) return self->finish_tls();
        self->gone();
        // Nothing more can come or go (the handshake failed): end a watch still waiting.
        if (ec) {
          beast::error_code ignored;
          beast::get_lowest_layer(self->ws_).socket().close(ignored);
        }
      });
    });
  }

  // -- TLS 1.3 half-close ------------------------------------------------------------------------
  // A wss client may end its sending side with TLS's close_notify after its end message (a
  // TLS-level half-close, where a plain client would shut down its TCP half). TLS 1.3 lets the
  // other side go on writing after it (RFC 8446 6.1: close_notify only says the sender will send
  // no more), so the finals still go out, as after a TCP half-close. Beast cannot carry them: the
  // read that met the close_notify (as an end of stream) has failed its WebSocket stream, so
  // what is left (the finals, the end, the close frame) is framed here (RFC 6455 5.2: a server's
  // frames are unmasked; uncompressed frames are valid with or without permessage-deflate) and
  // written to the TLS stream directly. TLS 1.2 requires the receiver of a close_notify to answer
  // with its own and discard pending writes (RFC 5246 7.2.1): there the client counts as gone.
  bool tls_half_close(beast::error_code ec) {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      return false;
    } else {
      if (ec != asio::error::eof || !input_done_ || closing_ || raw_frames_ || !tls_peer_closed()) return false;
      if (SSL_version(ws_.next_layer().native_handle()) != TLS1_3_VERSION) return false;
      spdlog::info("ws {}: the client ended its TLS stream (close_notify) after its end; its finals still go out", id_);
      raw_frames_ = true;
      ++st_->ws_tls_half_closes;
      keep_alive_ = shared_from_this();  // no read is pending from now on (as after a TCP half-close)
      return true;
    }
  }

  // One unfragmented frame of `opcode` with `payload`, written to the stream under the
  // WebSocket layer; on_raw_write follows.
  void write_raw_frame(uint8_t opcode, const std::string& payload) {
    raw_frame_.clear();
    raw_frame_ += static_cast<char>(0x80 | opcode);  // FIN
    const uint64_t n = payload.size();
    if (n < 126) {
      raw_frame_ += static_cast<char>(n);
    } else if (n <= 0xffff) {
      raw_frame_ += static_cast<char>(126);
      for (int shift = 8; shift >= 0; shift -= 8) raw_frame_ += static_cast<char>((n >> shift) & 0xff);
    } else {
      raw_frame_ += static_cast<char>(127);
      for (int shift = 56; shift >= 0; shift -= 8) raw_frame_ += static_cast<char>((n >> shift) & 0xff);
    }
    raw_frame_ += payload;
    asio::async_write(ws_.next_layer(), asio::buffer(raw_frame_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("write", [&] { self->on_raw_write(ec); });
    });
  }

  void on_raw_write(beast::error_code ec) {
    if (ec || !closing_frame_) return on_write(ec);
    finish_tls();  // the close frame is out
  }

  // Whether the client's TLS close_notify has come (over plain ws: never).
  bool tls_peer_closed() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      return false;
    } else {
      return (SSL_get_shutdown(ws_.next_layer().native_handle()) & SSL_RECEIVED_SHUTDOWN) != 0;
    }
  }

  // After the client's close_notify (and our close frame, if any): our close_notify (the
  // client's came first, so it completes at once), then the socket, which also ends a watch
  // still waiting. Once.
  void finish_tls() {
    if (tls_finishing_) return;
    tls_finishing_ = true;
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      ws_.next_layer().async_shutdown([self = shared_from_this()](beast::error_code) {
        self->guarded("close", [&] {
          self->gone();
          beast::error_code ignored;
          beast::get_lowest_layer(self->ws_).socket().close(ignored);
        });
      });
    }
  }

  websocket::stream<Stream> ws_;
  beast::flat_buffer buffer_;
  std::shared_ptr<server_state> st_;
  std::unique_ptr<ws_protocol> proto_;
  std::shared_ptr<void> slot_;
  uint64_t id_;
  std::string tenant_;  // auth: the admitted key's tenant; empty without keys
  asio::steady_timer session_timer_, idle_timer_;
  asio::steady_timer pause_timer_;  ///< while reads are paused (see pause_reading)
  std::deque<outgoing> queue_;
  std::vector<channel> channels_;  ///< one per engine channel, index = the protocol's channel
  bool closing_ = false, close_pending_ = false, input_done_ = false, counted_ = false, call_ended_ = false;
  websocket::close_reason close_reason_;
  calls::call_id call_id_;
  std::string end_reason_;  ///< why the call ended, once known (see close, fail)
  std::shared_ptr<session> keep_alive_;  ///< set while half-closed (see on_readable)
  uint64_t idle_generation_ = 0;         ///< see arm_idle_timer
  bool accepted_ = false, revoked_ = false;  ///< the handshake is done; the key was revoked before it
  bool paused_ = false;                  ///< no read pending: the backlog is over the mark
  bool peer_finished_ = false;           ///< the client sent its FIN: never paused again
  bool raw_frames_ = false;    ///< after a TLS 1.3 close_notify: frames written by hand (tls_half_close)
  bool closing_frame_ = false;  ///< the frame being written by hand is the close frame
  bool tls_finishing_ = false;  ///< finish_tls has begun
  std::string raw_frame_;      ///< the frame being written by hand
  std::chrono::steady_clock::time_point paused_since_;
};

// Posts `f` onto the session's strand, guarded there. Never throws into the actor. The session
// (and its strand) is locked only under the server's I/O gate: the actor may outlive the
// server, and a strand released after its io_context is a use after free (ASan found it for
// the switch calls' bridge).
template <class Session, class F>
void post_to(const std::weak_ptr<Session>& w, const std::shared_ptr<server_state::io_gate>& gate, const char* where,
             F f) noexcept {
  try {
    std::lock_guard lock(gate->mu);
    if (!gate->open) return;
    // The posted work holds the session weakly: the session is kept alive by its own pending
    // operations, not by the engine's events queued for it. The reference taken here is let
    // go under the gate, while the I/O context is known to exist.
    if (auto s = w.lock())
      asio::post(s->executor(), [w, where, f = std::move(f)]() mutable {
        if (auto alive = w.lock()) alive->guarded(where, [&] { f(*alive); });
      });
  } catch (const std::exception& e) {
    spdlog::error("ws bridge: could not post {} to its session: {}", where, e.what());
  }
}

template <class Session>
caf::behavior bridge_actor(caf::event_based_actor* self, std::weak_ptr<Session> w,
                           std::shared_ptr<server_state::io_gate> gate, actors::supervisor_actor_type supervisor, std::size_t i) {
  using session = Session;
  // CAF already keeps a throwing handler inside this actor (it exits with an error); the
  // session is told, instead of waiting for events that will not come.
  self->set_exception_handler([w, gate, i](caf::scheduled_actor*, std::exception_ptr&) -> caf::error {
    post_to(w, gate, "bridge failure", [i](session& s) { s.channel_lost(i, "the stream's bridge actor failed"); });
    return caf::make_error(caf::exit_reason::unhandled_exception);
  });
  // A channel stops normally after its drain or an abort; any other exit ends the stream.
  self->set_down_handler([w, gate, i](caf::down_msg& dm) {
    if (!dm.reason || dm.reason == caf::exit_reason::normal) return;
    post_to(w, gate, "channel failure", [i](session& s) { s.channel_lost(i, "the stream's channel failed"); });
  });
  return {
      [=](actors::open_atom, actors::channel_request& req) {
        self->request(supervisor, std::chrono::seconds(10), actors::open_atom::value, req,
                      caf::actor_cast<caf::actor>(self))
            .then([=](actors::open_reply& r) {
                    if (r.ok) self->monitor(r.handle);
                    post_to(w, gate, "open", [i, r](session& s) { s.channel_opened(i, r); });
                  },
                  [=](caf::error& e) {
                    actors::open_reply r{false, "the engine did not answer: " + self->system().render(e), 0, {},
                                         actors::refusal::unavailable};
                    post_to(w, gate, "open", [i, r](session& s) { s.channel_opened(i, r); });
                  });
      },
      [=](actors::transcript_event& ev) { post_to(w, gate, "event", [i, ev](session& s) { s.channel_event(i, ev); }); },
      [=](actors::progress_atom, uint64_t taken, int64_t pending_ms, bool caught_up) {
        post_to(w, gate, "progress",
                [i, taken, pending_ms, caught_up](session& s) { s.channel_progress(i, taken, pending_ms, caught_up); });
      },
      [=](actors::drained_atom, actors::channel_id) {
        post_to(w, gate, "drained", [i](session& s) { s.channel_drained(i); });
        self->quit();
      },
  };
}

template <class Stream>
void start_session(Stream stream, http::request<http::string_body> req, std::shared_ptr<server_state> st,
                   std::unique_ptr<ws_protocol> proto, std::shared_ptr<void> slot, uint64_t id, auth::principal who) {
  // auth: the stream's channels carry the admitted tenant
  const auto& server = *st;
  auto s = std::make_shared<session<Stream>>(std::move(stream), std::move(st), std::move(proto), std::move(slot), id,
                                             who.tenant);
  s->enrolment = enrol_for_revocation(server, who, auth::scope::stream, s);
  s->run(std::move(req));
}

}  // namespace

void run_ws_session(beast::tcp_stream stream, http::request<http::string_body> req, std::shared_ptr<server_state> st,
                    std::unique_ptr<ws_protocol> proto, std::shared_ptr<void> slot, uint64_t id, auth::principal who) {
  start_session(std::move(stream), std::move(req), std::move(st), std::move(proto), std::move(slot), id, std::move(who));
}

void run_ws_session(beast::ssl_stream<beast::tcp_stream> stream, http::request<http::string_body> req,
                    std::shared_ptr<server_state> st, std::unique_ptr<ws_protocol> proto, std::shared_ptr<void> slot,
                    uint64_t id, auth::principal who) {
  start_session(std::move(stream), std::move(req), std::move(st), std::move(proto), std::move(slot), id, std::move(who));
}

}  // namespace sluice::net
