#include "net/events_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <spdlog/spdlog.h>

#include "net/calls/call_json.hpp"
#include "net/key_revocation.hpp"

namespace sluice::net {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;

// What a client may send us (it is ignored): small.
constexpr std::size_t max_client_message_bytes = 4096;

template <class Stream>
class events_session : public std::enable_shared_from_this<events_session<Stream>> {
  using std::enable_shared_from_this<events_session<Stream>>::shared_from_this;

 public:
  events_session(Stream stream, std::shared_ptr<server_state> st, calls::subscription_filter filter,
                 std::shared_ptr<void> slot, uint64_t id)
      : ws_(std::move(stream)), st_(std::move(st)), filter_(std::move(filter)), slot_(std::move(slot)), id_(id) {}

  ~events_session() {
    if (sub_) sub_->cancel();
  }

  /// Registered with the server's key_streams while the session lives.
  std::shared_ptr<void> enrolment;

  /// The subscriber's key was revoked (posted by net/key_revocation.hpp): no more updates; an
  /// error, then close 1008.
  void on_key_revoked() {
    guarded([&] {
      if (done_) return;
      // Before the handshake is done nothing can be sent: on_accept acts on it.
      if (!accepted_) {
        revoked_ = true;
        return;
      }
      spdlog::info("events {}: the API key of this subscription was revoked", id_);
      done_ = true;
      if (sub_) sub_->cancel();
      if (writing_) return finish();
      say_and_close("key_revoked", "the API key of this subscription was revoked", "key revoked");
    });
  }

  asio::any_io_executor executor() { return ws_.get_executor(); }

  void run(http::request<http::string_body> req) {
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(max_client_message_bytes);
    // Subscribed before the handshake is answered: a client that got its 101 misses nothing
    // that happens after. Updates wait in the queue until the accept completes.
    subscribe();
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) { self->guarded([&] { self->on_accept(ec); }); });
  }

 private:
  template <class F>
  void guarded(F&& f) noexcept {
    try {
      f();
    } catch (const std::exception& e) {
      spdlog::error("events {}: a handler threw: {}; closing", id_, e.what());
      finish();
    } catch (...) {
      spdlog::error("events {}: a handler threw; closing", id_);
      finish();
    }
  }

  void finish() {
    done_ = true;
    if (sub_) sub_->cancel();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

  void subscribe() {
    // The wake runs on the ingest's thread: it only posts to this session's strand, and holds the
    // session weakly so that a departed client is not kept alive by the registry.
    std::weak_ptr<events_session> weak = shared_from_this();
    // The gate keeps a wake that comes while the server stops from posting to a context that
    // is gone.
    auto ex = ws_.get_executor();
    sub_ = st_->calls->subscribe(filter_, static_cast<std::size_t>(st_->calls_cfg.subscriber_queue),
                                 calls::overflow::drop_subscriber, [weak, ex, gate = st_->io] {
                                   std::lock_guard lock(gate->mu);
                                   if (!gate->open) return;
                                   asio::post(ex, [weak] {
                                     if (auto s = weak.lock()) s->guarded([&] { s->pump(); });
                                   });
                                 });
  }

  void on_accept(beast::error_code ec) {
    if (ec) return finish();
    spdlog::info("events {}: subscribed (call \"{}\", tenant \"{}\")", id_, filter_.call,
                 filter_.tenant ? *filter_.tenant : std::string("*"));
    accepted_ = true;
    if (revoked_) return on_key_revoked();
    pump();
    do_read();
  }

  void do_read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded([&] {
        if (ec) {
          // The client closed or went away: nothing more is sent.
          self->done_ = true;
          if (self->sub_) self->sub_->cancel();
          return;
        }
        self->in_.consume(self->in_.size());
        self->do_read();
      });
    });
  }

  // The last message: {"type":"error","code":code,"reason":reason}, then close 1008 saying
  // `close_why` (no write may be pending). A failed write closes the connection at once.
  void say_and_close(const std::string& code, const std::string& reason, const char* close_why) {
    out_ = calls::dump(nlohmann::json{{"type", "error"}, {"code", code}, {"reason", reason}});
    writing_ = true;
    ws_.text(true);
    ws_.async_write(asio::buffer(out_), [self = shared_from_this(), close_why](beast::error_code ec, std::size_t) {
      self->guarded([&] {
        self->writing_ = false;
        if (ec) return self->finish();
        self->ws_.async_close(websocket::close_reason(websocket::close_code::policy_error, close_why),
                              [self](beast::error_code) {});
      });
    });
  }

  // Writes the next queued update, one at a time; the queue grows while a write is pending.
  void pump() {
    if (!accepted_ || done_ || !sub_) return;
    if (writing_) {
      // Dropped while a write is stuck (the client stopped reading): nothing more can be said to
      // it, so the connection is closed, which ends the pending write.
      if (sub_->dropped()) {
        spdlog::warn("events {}: dropped while a write was pending: {}", id_, sub_->drop_reason());
        finish();
      }
      return;
    }
    if (sub_->dropped()) {
      done_ = true;
      const auto why = sub_->drop_reason();
      spdlog::warn("events {}: dropped: {}", id_, why);
      return say_and_close("slow", why, "fell behind");
    }
    for (;;) {
      auto next = sub_->take(1);
      if (next.empty()) return;
      auto j = calls::update_json(next.front());
      if (j.is_null()) continue;
      out_ = calls::dump(j);
      break;
    }
    writing_ = true;
    ws_.text(true);
    ws_.async_write(asio::buffer(out_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded([&] {
        self->writing_ = false;
        if (ec) return self->finish();
        self->pump();
      });
    });
  }

  websocket::stream<Stream> ws_;
  std::shared_ptr<server_state> st_;
  calls::subscription_filter filter_;
  std::shared_ptr<void> slot_;
  uint64_t id_;
  std::shared_ptr<calls::subscription> sub_;
  beast::flat_buffer in_;
  std::string out_;
  bool accepted_ = false, writing_ = false, done_ = false;
  bool revoked_ = false;  // the key was revoked before the handshake was done
};


template <class Stream>
void start_events(Stream stream, http::request<http::string_body> req, std::shared_ptr<server_state> st,
                  calls::subscription_filter filter, std::shared_ptr<void> slot, uint64_t id, const auth::principal& who) {
  beast::get_lowest_layer(stream).expires_never();
  const auto& server = *st;
  auto s = std::make_shared<events_session<Stream>>(std::move(stream), std::move(st), std::move(filter), std::move(slot), id);
  s->enrolment = enrol_for_revocation(server, who, auth::scope::read, s);
  s->run(std::move(req));
}

}  // namespace

void run_events_session(beast::tcp_stream stream, http::request<http::string_body> req,
                        std::shared_ptr<server_state> st, calls::subscription_filter filter,
                        std::shared_ptr<void> slot, uint64_t id, const auth::principal& who) {
  start_events(std::move(stream), std::move(req), std::move(st), std::move(filter), std::move(slot), id, who);
}

void run_events_session(beast::ssl_stream<beast::tcp_stream> stream, http::request<http::string_body> req,
                        std::shared_ptr<server_state> st, calls::subscription_filter filter,
                        std::shared_ptr<void> slot, uint64_t id, const auth::principal& who) {
  start_events(std::move(stream), std::move(req), std::move(st), std::move(filter), std::move(slot), id, who);
}

}  // namespace sluice::net
