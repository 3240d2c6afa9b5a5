#pragma once
/// `sluice serve`: the Beast HTTP/WebSocket server in front of one actor engine.
///
/// One acceptor; each connection gets its own strand (every handler of a connection runs on
/// it, in order) and its own write queue. Routes:
///   GET  /                 the supervisor dashboard (net/assets/dashboard.html, built in)
///   GET  /healthz /readyz  liveness; readiness (engine up and not draining)
///   GET  /metrics          Prometheus text exposition of the metrics snapshot
///   GET  /v1/actors        the metrics snapshot as JSON
///   GET  /v1/placement     the placement plan chosen at start (lanes, devices, experts) as JSON
///   POST /v1/transcribe    an audio file in the body -> JSON transcript (a job on the engine's
///                          upload queue: actors/upload_queue.hpp; 413/429/503 refusals)
///   GET  /v1/calls         live and recent calls; GET /v1/calls/{id} one call (calls/calls_api.hpp)
///   WS   /v1/events        live call updates (events_session.hpp)
///   WS   /v1/stream        sluice streaming protocol (net/protocols/sluice_protocol.hpp)
///   WS   /funasr and /     FunASR runtime protocol (net/protocols/funasr_protocol.hpp)
///   WS   /sherpa           sherpa-onnx streaming protocol (net/protocols/sherpa_protocol.hpp)
///   WS   /vosk             Vosk server protocol (net/protocols/vosk_protocol.hpp)
///   WS   /audio_fork /jambonz /jambonz/stt /twilio /audiohook   switches' protocols
///                          (net/switches/switch_routes.hpp), each source a call in `calls`
/// Listeners of their own on the same I/O threads: Asterisk AudioSocket ([audiosocket], TCP,
/// net/switches/audiosocket_listener.hpp).
/// Protocol ports ([listeners], net/ws_routes.hpp): FunASR, sherpa-onnx and Vosk each also on a
/// port of its own, where any path speaks that protocol and other HTTP requests get 400; each
/// has its own connection limit (the main port's is server.max_connections).
/// Limits ([server]): connections, message and body sizes, idle timeout, session length.
/// Every request is first checked for its Host and Origin (request_policy.hpp): 403 otherwise.
/// No exception leaves a handler: each is caught, logged with the connection id, and ends
/// that connection only (500 / close 1011); the I/O threads also catch and go on.
/// Access ([auth]): API keys per tenant with scopes, checked on every route (net/auth/gate.hpp).
/// TLS ([server] tls_cert_file, tls_key_file): the port then serves https and wss only
/// (net/connection.hpp); the certificate is reloaded for new connections when its files change
/// (every tls_reload_check_s) or on reload_tls() (SIGHUP in `sluice serve`: reload()).
/// The API keys file likewise: reloaded for new requests when it changes (every
/// auth.keys_reload_check_s) or on reload_keys() (and reload(), SIGHUP).

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "actors/engine.hpp"
#include "config/error.hpp"
#include "config/audiosocket_config.hpp"
#include "config/auth_config.hpp"
#include "config/listeners_config.hpp"
#include "config/calls_config.hpp"
#include "config/server_config.hpp"
#include "net/request_policy.hpp"
#include "net/auth/failure_limiter.hpp"
#include "net/auth/gate.hpp"
#include "net/calls/call_registry.hpp"
#include "net/calls/call_store.hpp"
#include "net/auth/key_streams.hpp"
#include "net/calls/webhook.hpp"
#include "net/tls_context.hpp"
#include "net/ws_routes.hpp"

namespace sluice::net {

/// What every connection of one server shares (read-only except the counters).
struct server_state {
  actors::engine* engine = nullptr;
  config::server_config cfg;
  request_policy policy{cfg};  ///< Host and Origin checks of [server]
  config::listeners_config listeners;  ///< the protocol ports' settings
  std::atomic<int> connections{0};     ///< on every port
  /// Open connections per port, indexed by ws_listener.
  std::array<std::atomic<int>, ws_listener_count> listener_connections{};
  std::atomic<uint64_t> next_connection_id{1};  ///< ids in the logs of connections and streams
  std::atomic<int64_t> ws_sessions{0};
  /// WebSocket flow control (net/ws_session.hpp): reads paused so far, streams paused now, and
  /// the most audio (ms) one stream has had in the server's hands at once (in flight to its
  /// channel or not yet recognized), over every stream since the start.
  std::atomic<int64_t> ws_read_pauses{0};
  std::atomic<int64_t> ws_paused_now{0};
  std::atomic<int64_t> ws_buffered_audio_peak_ms{0};
  /// wss streams whose client sent its TLS 1.3 close_notify after its end while results were
  /// still to go (they went out framed by hand: net/ws_session.hpp).
  std::atomic<int64_t> ws_tls_half_closes{0};
  /// AudioSocket connections refused: from outside audiosocket.allowed_sources, and past
  /// audiosocket.max_connections (net/switches/audiosocket_listener.cpp).
  std::atomic<int64_t> audiosocket_refused_source{0};
  std::atomic<int64_t> audiosocket_refused_limit{0};
  std::atomic<bool> draining{false};
  /// Who may make which request (net/auth/gate.hpp); never null once started.
  std::shared_ptr<const auth::gate> gate;
  /// The connections open with each API key, ended when a reload revokes it; never null.
  std::shared_ptr<auth::key_streams> key_streams = std::make_shared<auth::key_streams>();
  /// Per-address back-off after failed authentications (net/auth/failure_limiter.hpp); null
  /// without keys or with auth.max_failures = 0.
  std::shared_ptr<auth::failure_limiter> auth_failures;
  config::auth_config auth_cfg;  ///< [auth], for the messages that quote it
  /// The TLS context of new connections; null without TLS.
  std::shared_ptr<tls_context_store> tls;
  /// Every ingested source as a call (net/calls/call_registry.hpp); never null once started.
  std::shared_ptr<calls::call_registry> calls;
  config::calls_config calls_cfg;  ///< [calls]
  /// The SQLite store of the calls ([calls] store); null when off.
  std::shared_ptr<calls::call_store> call_store;
  /// The webhook of ended calls ([calls] webhook_url); null when none.
  std::shared_ptr<calls::webhook> webhook;
  /// Lets other threads (the call registry's wakes of /v1/events sessions) post to the I/O
  /// context only while it exists: server::stop() closes it before the context goes.
  struct io_gate {
    std::mutex mu;
    bool open = true;
  };
  std::shared_ptr<io_gate> io = std::make_shared<io_gate>();
  /// More /metrics text from services beside the server (the SIP service's figures), each
  /// called at every scrape, in the order added (server::add_metrics).
  struct metrics_sources {
    std::mutex mu;
    std::vector<std::function<std::string()>> sources;
  };
  std::shared_ptr<metrics_sources> more_metrics = std::make_shared<metrics_sources>();

  /// The connection limit of a port: server.max_connections for main, its own for the others.
  int max_connections(ws_listener l) const;
};

/// One bound port: which protocol it serves and its number.
struct bound_port {
  ws_listener listener = ws_listener::main;
  uint16_t port = 0;
};

class server {
 public:
  /// Binds [server] host:port (port 0: any free port), and each enabled protocol port of
  /// `listeners` on the same host (the default binds none). errc::io when it cannot listen;
  /// errc::invalid_config (and the key store's errors) when [auth] forbids serving that host
  /// or its keys file cannot be used (net/auth/gate.hpp); errc::io or errc::invalid_config
  /// when TLS is configured and its files cannot be used (net/tls_context.hpp).
  /// `audiosocket`: the AudioSocket listener's config when it is enabled (its errors likewise);
  /// nullopt or disabled: none.
  /// `calls` ([calls]): with store = true, the calls stored in its SQLite file are loaded back
  /// first (errc::io when the file cannot be used); a webhook_url that is neither http:// nor https:// is
  /// errc::invalid_config.
  static result<std::unique_ptr<server>> start(actors::engine& engine, const config::server_config& cfg,
                                               const config::auth_config& auth = {},
                                               const config::listeners_config& listeners = no_listeners(),
                                               const std::optional<config::audiosocket_config>& audiosocket = {},
                                               const config::calls_config& calls = {});
  /// A [listeners] with every protocol port disabled.
  static config::listeners_config no_listeners();
  ~server();

  uint16_t port() const { return port_; }
  /// The port a listener is bound to; 0 when it is not (disabled).
  uint16_t port(ws_listener l) const;
  /// Every bound port, the main one first.
  const std::vector<bound_port>& ports() const { return ports_; }
  /// The AudioSocket listener's port; 0 when it does not listen.
  uint16_t audiosocket_port() const { return audiosocket_port_; }
  /// The calls of this server (live and recent); see net/calls/call_registry.hpp.
  calls::call_registry& calls() { return *state_->calls; }
  /// The same registry, shared: for ingests that run beside the server (net/sip/sip_service.hpp).
  std::shared_ptr<calls::call_registry> shared_calls() const { return state_->calls; }
  /// The per-address back-off after invalid API keys (auth.max_failures), for the RTSP service to
  /// share; null without keys or with auth.max_failures = 0.
  std::shared_ptr<auth::failure_limiter> auth_failures() const { return state_->auth_failures; }
  /// Connections open on every port now (counted from accept: net/connection_slot.hpp).
  int open_connections() const { return state_->connections; }
  /// WebSocket flow control so far (see server_state): reads paused, streams paused now, the
  /// most audio (ms) one stream had in the server's hands at once.
  struct ws_flow {
    int64_t read_pauses = 0, paused_now = 0, buffered_audio_peak_ms = 0;
  };
  ws_flow ws_flow_control() const {
    return {state_->ws_read_pauses, state_->ws_paused_now, state_->ws_buffered_audio_peak_ms};
  }
  /// wss streams half-closed by a TLS 1.3 close_notify after their end (see server_state).
  int64_t ws_tls_half_closes() const { return state_->ws_tls_half_closes; }
  /// Whether the port serves TLS.
  bool tls() const { return state_->tls != nullptr; }
  /// Reads the TLS certificate and key again for new connections; open connections keep
  /// theirs. On failure the old certificate stays and the error (also logged) says why.
  /// errc::invalid_argument when the server has no TLS. Thread-safe.
  result<void> reload_tls();
  /// The principal of an API key presented outside HTTP (RTSP pushes), by the same keys as every
  /// route; nullopt when it is not a valid key or no keys are configured. Thread-safe.
  std::optional<auth::principal> authenticate_key(std::string_view key) const;
  /// Reads the keys file ([auth] keys_file) again for new requests and upgrades on every port;
  /// streams already open go on, even with a key the file no longer holds. On failure the old
  /// keys stay and the error (also logged) says why (net/auth/live_key_store.hpp).
  /// errc::invalid_argument when the server has no keys file. Thread-safe.
  result<void> reload_keys();
  /// SIGHUP in `sluice serve`: reload_tls() when the server has TLS and reload_keys() when it
  /// has keys, each whatever the other's outcome; the first failure, if any.
  /// errc::invalid_argument when it has neither. Thread-safe.
  result<void> reload();
  /// The calls store and webhook (null when not configured): their counters, for tests and tools.
  const calls::call_store* call_store() const { return state_->call_store.get(); }
  const calls::webhook* webhook() const { return state_->webhook.get(); }
  /// The connections open with each API key ([auth] revoke_open_streams ends them).
  const auth::key_streams& key_streams() const { return *state_->key_streams; }
  /// The same, for services outside the server that enrol their connections (RTSP pushes).
  std::shared_ptr<auth::key_streams> shared_key_streams() const { return state_->key_streams; }
  /// Adds text to every /metrics scrape from now on (Prometheus exposition lines, each family
  /// with its HELP and TYPE). `source` must stay callable for the server's life. Thread-safe.
  void add_metrics(std::function<std::string()> source);
  /// Stops accepting, ends every stream (the engine drains them), stops the I/O threads, then
  /// writes the calls store's queue and stops it, and stops the webhook (calls still queued are
  /// posted for up to [calls] webhook_drain_ms, the rest are not).
  void stop();

 private:
  server() = default;
  std::shared_ptr<server_state> state_;
  std::unique_ptr<boost::asio::io_context> ioc_;
  std::vector<std::thread> threads_;
  std::vector<std::shared_ptr<void>> listeners_;  // one per bound port
  std::vector<bound_port> ports_;
  std::shared_ptr<void> tls_watch_;   // the timer of tls_reload_check_s (net/server.cpp)
  std::shared_ptr<void> keys_watch_;  // the timer of auth.keys_reload_check_s
  std::shared_ptr<void> audiosocket_;  // net/switches/audiosocket_listener.hpp
  uint16_t port_ = 0, audiosocket_port_ = 0;
  bool stopped_ = false;
};

}  // namespace sluice::net
