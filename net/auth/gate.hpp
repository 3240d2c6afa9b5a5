#pragma once
/// The server's door: who may start it where, and who may make each request.
///
/// Startup ([auth], [server] host): with a keys file every request but /healthz and /readyz
/// needs a key. Without one, every client is served as the anonymous principal (every scope,
/// every tenant), which is allowed only on a loopback address (127.0.0.0/8, ::1) unless
/// auth.allow_insecure_public; elsewhere the server refuses to start and says why.
///
/// Per request, a key is read from, in order:
///   Authorization: Bearer <key>      any request
///   X-API-Key: <key>                 any request
///   ?token=<key>                     WebSocket upgrades and the dashboard page (GET /) only,
///                                    for browsers and FunASR clients that cannot set headers
/// and the route's scope is checked:
///   /healthz /readyz                 no key
///   GET / /index.html, /v1/actors    read      (/v1/actors shows only the tenant's streams and
///                                              totals; the engine's too with metrics as well)
///   GET /v1/placement                read      (the engine's placement plan)
///   GET /v1/calls[/{id}], WS /v1/events  read  (a tenant's own calls only)
///   GET /metrics                     metrics   (no key when auth.metrics_open)
///   POST /v1/transcribe, other WebSockets  stream
///   anything else                    any valid key (then the router answers 404/405)
/// Missing or unknown key: 401 with `WWW-Authenticate: Bearer realm="sluice"` (RFC 6750); a
/// valid key without the scope: 403 with error="insufficient_scope". Keys are never logged.
/// Repeated invalid keys from one address are answered 429 for a while (failure_limiter.hpp,
/// applied by the HTTP session around admit()).
///
/// Keys change without a restart (live_key_store.hpp): each admit() checks the keys file's
/// current store, so a reload applies to every new request and upgrade on every port the gate
/// guards; what was admitted before (an open stream) is not checked again.

#include <memory>
#include <optional>
#include <string>

#include <boost/beast/http.hpp>
#include <tl/expected.hpp>

#include "config/auth_config.hpp"
#include "config/error.hpp"
#include "config/server_config.hpp"
#include "net/auth/key_store.hpp"
#include "net/auth/live_key_store.hpp"
#include "net/auth/principal.hpp"

namespace sluice::net::auth {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// Why a request is turned away.
struct refusal {
  int status = 401;              ///< 401 (no or unknown key) or 403 (key lacks the scope)
  std::string www_authenticate;  ///< the WWW-Authenticate header value
  std::string reason;            ///< for the client; never contains the key
  bool invalid_key = false;      ///< a key was presented and is not valid (a failed authentication)
};

class gate {
 public:
  /// Applies the startup policy and loads the keys file. errc::invalid_config for a non-loopback
  /// host without keys (and without allow_insecure_public), or a keys file with no keys;
  /// the key_store's errors for an unreadable or malformed keys file.
  static result<std::shared_ptr<const gate>> create(const config::server_config& server,
                                                    const config::auth_config& auth);

  /// True when keys are required.
  bool enabled() const { return keys_ != nullptr; }

  /// The keys file's store, to reload it (live_key_store.hpp); null without keys.
  const std::shared_ptr<live_key_store>& keys() const { return keys_; }

  /// The principal `req` acts as, or why it may not. Thread-safe (any I/O thread).
  tl::expected<principal, refusal> admit(const http_request& req) const;

  /// The principal of `key` presented outside HTTP (RTSP pushes); nullopt when it is not a key
  /// of the store, or when no keys are configured.
  std::optional<principal> authenticate_key(std::string_view key) const {
    return keys_ ? keys_->current()->authenticate(key) : std::nullopt;
  }

  /// The 401/403 response for `r` (JSON body {"error": reason}; closes the connection).
  static http_response response(const refusal& r, unsigned http_version);

 private:
  std::shared_ptr<live_key_store> keys_;  // null: no keys file
  bool metrics_open_ = false;
};

/// True for 127.0.0.0/8 and ::1; false for anything else, including names and "0.0.0.0".
bool is_loopback_host(const std::string& host);

}  // namespace sluice::net::auth
