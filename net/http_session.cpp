#include "net/http_session.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <map>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <spdlog/spdlog.h>

#include "actors/placement_probe.hpp"
#include "actors/upload_job.hpp"
#include "dsp/pcm.hpp"
#include "net/http_query.hpp"
#include "net/json_fields.hpp"
#include "net/tenant_api.hpp"
#include "net/multipart.hpp"
#include "net/prometheus.hpp"
#include "net/protocols/deepgram_protocol.hpp"
#include "net/protocols/deepgram_rest.hpp"
#include "net/request_policy.hpp"
#include "net/auth/tenant_view.hpp"
#include "net/switches/switch_routes.hpp"
#include "net/switches/switch_ws_session.hpp"
#include "net/ws_routes.hpp"
#include "net/calls/call_json.hpp"
#include "net/calls/calls_api.hpp"
#include "net/calls/upload_call.hpp"
#include "net/events_session.hpp"
#include "net/ws_session.hpp"

namespace sluice::net {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;

// {"error": why}, built by the JSON library (never by concatenation: `why` may quote a path).
std::string error_body(const std::string& why) { return to_wire(json{{"error", why}}); }

template <class Stream>
constexpr bool is_tls = !std::is_same_v<Stream, beast::tcp_stream>;

// One template for both transports (Beast's way, as in its advanced_server_flex example):
// Stream is beast::tcp_stream (plain) or beast::ssl_stream<beast::tcp_stream> (TLS, already
// handshaken by net/connection.cpp). Only the end of a connection differs (shutdown_send).
template <class Stream>
class http_session : public std::enable_shared_from_this<http_session<Stream>> {
  using std::enable_shared_from_this<http_session<Stream>>::shared_from_this;

 public:
  http_session(Stream stream, beast::flat_buffer buffer, std::shared_ptr<server_state> st, ws_listener kind,
               std::shared_ptr<connection_slot> slot)
      : stream_(std::move(stream)), buffer_(std::move(buffer)), st_(std::move(st)), kind_(kind),
        slot_(slot ? std::move(slot) : std::make_shared<connection_slot>(st_, kind)),
        id_(st_->next_connection_id++) {}

  void run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->guarded("start", [&] { self->start(); }); });
  }

 private:
  // Runs a handler's body so that nothing it throws leaves the handler: logged with the
  // connection id, answered with 500, and the connection closed.
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
    spdlog::error("http {}: {} handler threw: {}; closing this connection", id_, where, what);
    try {
      write(make_response(http::status::internal_server_error, "application/json", error_body("internal server error"),
                          11, false));
    } catch (...) {
      beast::error_code ignored;
      lowest().socket().close(ignored);
    }
  }

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  // Ends what this side sends: a TCP half-close, or over TLS the close_notify alert (RFC 8446
  // 6.1) under the idle timeout; the connection closes when the session is released.
  void shutdown_send() {
    if constexpr (is_tls<Stream>) {
      lowest().expires_after(std::chrono::seconds(st_->cfg.idle_timeout_s));
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    }
  }

  void start() {
    if (slot_->over_limit()) {
      // Over the limit: one clear answer, then the connection closes.
      const std::string key = kind_ == ws_listener::main ? "server.max_connections"
                                                         : "listeners." + std::string(listener_name(kind_)) + "_max_connections";
      auto res = make_response(http::status::service_unavailable, "text/plain",
                               "too many connections (" + key + " = " + std::to_string(st_->max_connections(kind_)) + ")\n",
                               11, false);
      write(std::move(res));
      return;
    }
    do_read();
  }

  void do_read() {
    parser_.emplace();
    parser_->body_limit(static_cast<std::uint64_t>(st_->cfg.max_body_bytes));
    parser_->header_limit(16 * 1024);
    lowest().expires_after(std::chrono::seconds(st_->cfg.idle_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->guarded("read header", [&] { self->on_header(ec); });
    });
  }

  // Host/Origin (request_policy.hpp), then access (net/auth/gate.hpp), are decided on the header:
  // 403/401 before any route or WebSocket upgrade runs, and a refused client's body is never read.
  void on_header(beast::error_code ec) {
    if (!ec) {
      const auto& h = parser_->get();
      if (auto why = st_->policy.refusal(h[http::field::host], h[http::field::origin]); !why.empty()) {
        spdlog::info("http {}: refused: {}", id_, why);
        write(make_response(http::status::forbidden, "application/json", error_body(why), h.version(), false));
        return;
      }
      // A locked-out address is answered before its key is even looked at (see
      // net/auth/failure_limiter.hpp): a guesser learns nothing while it waits.
      const auto& limiter = st_->auth_failures;
      const std::string ip = limiter ? peer_address() : std::string();
      if (limiter)
        if (const auto wait = limiter->retry_after(ip)) return write(locked_out(*wait, h.version()));
      auto admitted = st_->gate->admit(h);
      if (!admitted) {
        if (limiter && admitted.error().invalid_key && limiter->record_failure(ip))
          spdlog::warn("http {}: {} is locked out for {} s after {} invalid API keys within {} s (auth.max_failures)",
                       id_, ip, st_->auth_cfg.lockout_s, st_->auth_cfg.max_failures, st_->auth_cfg.failure_window_s);
        return write(auth::gate::response(admitted.error(), h.version()));
      }
      who_ = std::move(*admitted);
      if (!parser_->is_done())
        return http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code e, std::size_t) {
          self->guarded("read", [&] { self->on_read(e); });
        });
    }
    on_read(ec);
  }

  // The client's IP address as text ("unknown" when the socket cannot tell).
  std::string peer_address() {
    beast::error_code ec;
    const auto peer = lowest().socket().remote_endpoint(ec);
    return ec ? std::string("unknown") : peer.address().to_string();
  }

  // 429 for an address in its failed-authentication back-off; the connection closes.
  http::response<http::string_body> locked_out(int retry_after_s, unsigned version) const {
    auto res = make_response(http::status::too_many_requests, "application/json",
                             error_body(st_->auth_failures->lockout_message(retry_after_s)), version, false);
    res.set(http::field::retry_after, std::to_string(retry_after_s));
    return res;
  }

  static http::response<http::string_body> make_response(http::status status, const std::string& type, std::string body,
                                                         unsigned version, bool keep_alive) {
    http::response<http::string_body> res{status, version};
    res.set(http::field::server, "sluice");
    res.set(http::field::content_type, type);
    res.keep_alive(keep_alive);
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return shutdown_send();
    // A TLS client that closed its TCP connection without a close_notify: it is gone.
    if (ec == asio::ssl::error::stream_truncated) return;
    if (ec == http::error::body_limit) {
      write(make_response(http::status::payload_too_large, "application/json",
                          error_body("body larger than server.max_body_bytes = " + std::to_string(st_->cfg.max_body_bytes)),
                          11, false));
      return;
    }
    if (ec) {
      if (ec != beast::error::timeout && ec != asio::error::operation_aborted && ec != asio::error::connection_reset)
        write(make_response(http::status::bad_request, "application/json", error_body("bad request: " + ec.message()),
                            11, false));
      return;
    }
    auto req = parser_->release();
    if (websocket::is_upgrade(req)) {
      const std::string target(req.target());
      const std::string path = target.substr(0, target.find('?'));
      if (path == "/v1/events") {
        auto filter = calls::events_filter(who_, target);
        if (!filter)
          return write(make_response(filter.error().code == errc::unsupported ? http::status::forbidden
                                                                              : http::status::bad_request,
                                     "application/json", error_body(filter.error().message), req.version(), false));
        lowest().expires_never();
        run_events_session(std::move(stream_), std::move(req), st_, std::move(*filter), slot_, id_, who_);
        return;
      }
      std::unique_ptr<ws_protocol> proto;
      if (kind_ == ws_listener::main && path == deepgram_path) {
        // Deepgram's clients put every option in the query: a bad one is refused before the upgrade.
        auto options = parse_deepgram_query(target);
        if (!options)
          return write(make_response(http::status::bad_request, "application/json",
                                     error_body(options.error().message), req.version(), false));
        proto = make_deepgram_protocol(std::move(*options));
      } else {
        proto = kind_ == ws_listener::main ? protocol_for_path(path) : protocol_for_listener(kind_);
      }
      if (proto) {
        lowest().expires_never();
        run_ws_session(std::move(stream_), std::move(req), st_, std::move(proto), slot_, id_, who_);
        return;
      }
      if (kind_ == ws_listener::main && switches::is_switch_path(path)) {
        auto protocol = switches::make_switch_protocol(target, std::string(req["Audiohook-Session-Id"]));
        if (!protocol)
          return write(make_response(http::status::bad_request, "application/json", error_body(protocol.error()),
                                     req.version(), false));
        lowest().expires_never();
        switches::run_switch_session(std::move(stream_), std::move(req), st_, std::move(*protocol), slot_, id_, who_);
        return;
      }
      write(make_response(http::status::not_found, "application/json", error_body("no WebSocket at this path"),
                          req.version(), false));
      return;
    }
    if (kind_ != ws_listener::main) {
      write(make_response(http::status::bad_request, "application/json",
                          error_body("this port speaks only the " + std::string(listener_name(kind_)) +
                                     " WebSocket protocol; HTTP requests go to the main port"),
                          req.version(), false));
      return;
    }
    route(std::move(req));
  }

  void route(http::request<http::string_body> req) {
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    const auto v = req.version();
    const bool ka = req.keep_alive();
    const auto method = req.method();
    auto reply = [&](http::status s, const std::string& type, std::string body) {
      write(make_response(s, type, std::move(body), v, ka));
    };
    if (method == http::verb::get) {
      if (path == "/healthz") return reply(http::status::ok, "text/plain", "ok\n");
      if (path == "/readyz")
        return st_->draining ? reply(http::status::service_unavailable, "text/plain", "draining\n")
                             : reply(http::status::ok, "text/plain", "ready\n");
      if (path == "/v1/actors") {
        auto snap = st_->engine->snapshot();
        return snap.empty() ? reply(http::status::service_unavailable, "application/json",
                                    error_body("the metrics actor did not answer"))
                            : reply(http::status::ok, "application/json", auth::snapshot_for(snap, who_));
      }
      if (path == "/v1/placement")  // fixed at start: built from the engine's plan, no actor asked
        return reply(http::status::ok, "application/json", actors::placement_json(st_->engine->placement()));
      if (path == "/metrics") {
        std::string text = to_prometheus(st_->engine->snapshot());
        server_figures f;
        f.connections = st_->connections;
        f.ws_streams = st_->ws_sessions;
        f.ws_read_pauses = st_->ws_read_pauses;
        f.ws_paused_now = st_->ws_paused_now;
        f.ws_buffered_audio_peak_ms = st_->ws_buffered_audio_peak_ms;
        f.ws_tls_half_closes = st_->ws_tls_half_closes;
        f.audiosocket_refused_source = st_->audiosocket_refused_source;
        f.audiosocket_refused_limit = st_->audiosocket_refused_limit;
        f.draining = st_->draining;
        text += server_prometheus(f);
        if (st_->webhook) {
          const auto c = st_->webhook->stats();
          text += calls::webhook_prometheus(c.delivered, c.given_up, c.dropped, c.abandoned, c.attempts);
        }
        {
          std::lock_guard lock(st_->more_metrics->mu);
          for (const auto& source : st_->more_metrics->sources) text += source();
        }
        return reply(http::status::ok, "text/plain; version=0.0.4; charset=utf-8", text);
      }
      if (path == "/" || path == "/index.html") return reply(http::status::ok, "text/html; charset=utf-8", dashboard_html());
      constexpr std::string_view call_prefix = "/v1/calls/";
      if (path == "/v1/calls" || path.rfind(call_prefix, 0) == 0) {
        const std::string id = path.size() > call_prefix.size() ? path.substr(call_prefix.size()) : std::string();
        const auto r = path == "/v1/calls" ? calls::list_calls(*st_->calls, who_, target)
                                           : calls::get_call(*st_->calls, who_, id);
        return reply(static_cast<http::status>(r.status), "application/json", r.body);
      }
      return reply(http::status::not_found, "application/json", error_body("not found: " + path));
    }
    if (method == http::verb::post && path == deepgram_path) return deepgram_file(req, target, v, ka);
    if (method == http::verb::post && path == "/v1/transcribe") {
      if (req.body().empty()) return reply(http::status::bad_request, "application/json", error_body("empty body: send an audio file"));
      // A multipart form: its first part that carries data is the file.
      std::string body = std::move(req.body());
      const std::string type(req[http::field::content_type]);
      if (type.rfind("multipart/form-data", 0) == 0) {
        auto part = first_multipart_part(type, body);
        if (!part) return reply(http::status::bad_request, "application/json", error_body("malformed multipart body"));
        body = std::move(*part);
      }
      // A headerless body: ?sample_rate=8000&encoding=mulaw[&channels=2]. Checked here, before
      // any of it is used or quoted back.
      std::optional<actors::raw_audio_format> raw;
      const auto q = query_params(target);
      if (!q) return reply(http::status::bad_request, "application/json", error_body(q.error().message));
      if (q->count("sample_rate") || q->count("encoding")) {
        raw.emplace();
        const auto rate = q->count("sample_rate")
                              ? query_int("sample_rate", q->at("sample_rate"), dsp::min_sample_rate, dsp::max_sample_rate)
                              : result<int64_t>(0);
        const auto channels =
            q->count("channels") ? query_int("channels", q->at("channels"), 1, dsp::max_channels) : result<int64_t>(1);
        if (!rate) return reply(http::status::bad_request, "application/json", error_body(rate.error().message));
        if (!channels) return reply(http::status::bad_request, "application/json", error_body(channels.error().message));
        raw->sample_rate = static_cast<int>(*rate);
        raw->channels = static_cast<int>(*channels);
        if (q->count("encoding")) raw->encoding = q->at("encoding");
      }
      actors::upload_request up;
      up.body = std::move(body);
      up.raw = std::move(raw);
      return submit_upload(std::move(up), "transcribe reply", [v, ka](actors::upload_reply& r) {
        return make_response(static_cast<http::status>(r.status), "application/json", std::move(r.body), v, ka);
      });
    }
    if (method == http::verb::put && path.rfind("/v1/tenants/", 0) == 0) {
      const auto& tenants = st_->engine->resources().tenants;
      if (!tenants) return reply(http::status::service_unavailable, "application/json", error_body("no tenant store"));
      auto r = put_tenant_hotwords(path, req.body(), who_, *tenants);
      return reply(static_cast<http::status>(r.status), "application/json", std::move(r.body));
    }
    return reply(http::status::method_not_allowed, "application/json",
                 error_body(std::string(http::to_string(method)) + " " + path + " is not served"));
  }

  // Deepgram's pre-recorded API (net/protocols/deepgram_rest.hpp): the body is a file, as for
  // /v1/transcribe, and the transcript comes back in Deepgram's shape.
  void deepgram_file(http::request<http::string_body>& req, const std::string& target, unsigned v, bool ka) {
    auto refuse = [&](http::status status, const std::string& why) {
      write(make_response(status, "application/json", to_wire(deepgram_error(static_cast<int>(status), why, "")), v, ka));
    };
    auto options = parse_deepgram_query(target, /*live=*/false);
    if (!options) return refuse(http::status::bad_request, options.error().message);
    if (req.body().empty()) return refuse(http::status::bad_request, "empty body: send the audio file as the body");
    const std::string type(req[http::field::content_type]);
    if (type.rfind("application/json", 0) == 0)
      return refuse(http::status::bad_request, "a URL source is not fetched (sluice makes no outside requests): "
                                               "send the audio file as the body");
    // Filled in on the upload worker (the hash of up to server.max_body_bytes is not a network
    // thread's work), read once the reply is posted back here.
    auto info = std::make_shared<deepgram_request_info>();
    info->created = calls::iso_utc(std::chrono::system_clock::now());
    actors::upload_request up;
    up.observer.body = [info](std::string_view body) { info->sha256 = sha256_hex(body); };
    up.hotwords = options->hotwords;
    if (!options->encoding.empty())
      up.raw = actors::raw_audio_format{options->encoding == "linear16" ? "pcm_s16le" : options->encoding,
                                        options->sample_rate, options->channels};
    up.body = std::move(req.body());
    submit_upload(std::move(up), "deepgram reply", [v, ka, o = *options, info](actors::upload_reply& r) {
      info->request_id = r.call_id;
      const auto doc = nlohmann::json::parse(r.body, nullptr, false);
      std::string body;
      if (r.status == 200 && doc.is_object()) {
        body = to_wire(deepgram_prerecorded(doc, o, *info));
      } else {
        const std::string why = doc.is_object() && doc.contains("error") && doc["error"].is_string()
                                    ? doc["error"].get<std::string>()
                                    : "the transcription failed";
        body = to_wire(deepgram_error(r.status == 200 ? 500 : r.status, why, info->request_id));
      }
      auto res = make_response(static_cast<http::status>(r.status == 200 && !doc.is_object() ? 500 : r.status),
                               "application/json", std::move(body), v, ka);
      if (!info->request_id.empty()) res.set("dg-request-id", info->request_id);
      return res;
    });
  }

  // Queues an upload of this connection's client and tenant: the body moves to the upload
  // queue, nothing is decoded here. `answer` words the reply on this connection's strand; a
  // Retry-After goes with it when the queue gives one. `what` names the reply in the logs.
  void submit_upload(actors::upload_request up, const char* what,
                     std::function<http::response<http::string_body>(actors::upload_reply&)> answer) {
    beast::error_code peer_ec;
    const auto peer = lowest().socket().remote_endpoint(peer_ec);
    up.client = peer_ec ? std::string("unknown") : peer.address().to_string();
    up.tenant = who_.tenant;
    up.done = [self = shared_from_this(), what, answer = std::move(answer)](actors::upload_reply r) {
      asio::post(self->stream_.get_executor(), [self, what, answer, r = std::move(r)]() mutable {
        self->guarded(what, [&] {
          auto res = answer(r);
          if (r.retry_after_s > 0) res.set(http::field::retry_after, std::to_string(r.retry_after_s));
          self->write(std::move(res));
        });
      });
    };
    calls::follow_upload(st_->calls, up);
    st_->engine->uploads().submit(std::move(up));
  }

  void write(http::response<http::string_body> res) {
    auto sp = std::make_shared<http::response<http::string_body>>(std::move(res));
    lowest().expires_after(std::chrono::seconds(st_->cfg.idle_timeout_s));
    http::async_write(stream_, *sp, [self = shared_from_this(), sp](beast::error_code ec, std::size_t) {
      self->guarded("write", [&] {
        if (ec) return;
        if (sp->need_eof()) return self->shutdown_send();
        self->do_read();
      });
    });
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::shared_ptr<server_state> st_;
  ws_listener kind_;
  std::shared_ptr<connection_slot> slot_;
  std::optional<http::request_parser<http::string_body>> parser_;
  uint64_t id_;
  auth::principal who_;  // who the current request acts as (set by the gate)
};

}  // namespace

void run_http_session(beast::tcp_stream stream, beast::flat_buffer buffer, std::shared_ptr<server_state> st,
                      ws_listener kind, std::shared_ptr<connection_slot> slot) {
  std::make_shared<http_session<beast::tcp_stream>>(std::move(stream), std::move(buffer), std::move(st), kind,
                                                    std::move(slot))
      ->run();
}

void run_http_session(beast::ssl_stream<beast::tcp_stream> stream, beast::flat_buffer buffer,
                      std::shared_ptr<server_state> st, ws_listener kind, std::shared_ptr<connection_slot> slot) {
  std::make_shared<http_session<beast::ssl_stream<beast::tcp_stream>>>(std::move(stream), std::move(buffer),
                                                                      std::move(st), kind, std::move(slot))
      ->run();
}

}  // namespace sluice::net
