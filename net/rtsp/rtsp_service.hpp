#pragma once
/// RTSP ingest of `sluice serve` ([rtsp], net/rtsp/): the push endpoint (a TCP listener whose
/// connections are rtsp_session) and the pulls of rtsp.pull (rtsp_pull), on one io_context
/// thread of their own; each push session or pulled stream is a call in the registry.
///
/// Why no RTSP library: Debian 12 packages live555 (liblivemedia-dev) and GStreamer's
/// gst-rtsp-server. live555 runs its own single-threaded event loop that wants the process (as
/// sofia does for SIP, but without sofia's field record as a server for pushes: its RECORD
/// support is a demo); gst-rtsp-server would put a GStreamer pipeline and GLib main loop in
/// every call's media path. The RTSP a pusher or a camera speaks is a small text protocol
/// around RTP, and RTP is already ours (net/sip/: jitter buffer, decoders, port pool), so the
/// glue is a bounded request parser (fuzzed) and two small state machines on Asio.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "config/error.hpp"
#include "config/rtsp_config.hpp"
#include "net/auth/failure_limiter.hpp"
#include "net/auth/key_streams.hpp"
#include "net/auth/principal.hpp"
#include "net/calls/call_registry.hpp"

namespace sluice::net::rtsp {

class rtsp_service {
 public:
  /// Listens on rtsp.host:port when `cfg.enabled` and starts the pulls of `cfg.pull`.
  /// errc::io when the port cannot be bound, errc::invalid_config for a bad host or pull URL.
  /// `calls` must outlive the service's calls: stop() first.
  /// `authenticate` ([auth] keys, net/auth/gate.hpp): when set, every push request but OPTIONS
  /// needs `Authorization: Basic` with an API key of scope stream as its password (or as its
  /// user name when the password is empty): rtsp://any:<key>@host/name in ffmpeg and GStreamer.
  /// Missing or unknown key: 401 with `WWW-Authenticate: Basic realm="sluice"`; a key without
  /// stream scope: 403. The call belongs to the key's tenant. Pulls are not affected.
  /// `failures` (the server's auth.max_failures back-off, net/auth/failure_limiter.hpp): each
  /// invalid key counts against the client's address as on the HTTP routes; a locked-out address
  /// gets 503 with Retry-After to every request that needs a key, a valid key included, and the
  /// connection is closed.
  /// `key_streams` (the server's, net/auth/key_streams.hpp): each push enrols under its key, and
  /// a reload that revokes the key closes the connection; the call ends "error: key_revoked"
  /// with what was already received transcribed.
  static result<std::unique_ptr<rtsp_service>> start(
      actors::engine& engine, std::shared_ptr<calls::call_registry> calls, const config::rtsp_config& cfg,
      std::function<std::optional<auth::principal>(std::string_view key)> authenticate = {},
      std::shared_ptr<auth::failure_limiter> failures = {}, std::shared_ptr<auth::key_streams> key_streams = {});
  ~rtsp_service();
  rtsp_service(const rtsp_service&) = delete;
  rtsp_service& operator=(const rtsp_service&) = delete;

  /// The URLs of an rtsp.pull list (comma-separated, blanks around them trimmed).
  static std::vector<std::string> pull_urls(const std::string& list);

  /// The bound port (0 when pushes are disabled).
  uint16_t port() const;
  /// ANNOUNCEd push sessions now (thread-safe).
  int live_sessions() const;
  /// Open push connections now (thread-safe).
  int connections() const;
  /// Why each pull of rtsp.pull last failed, in the order of the list ("" for none yet).
  std::vector<std::string> pull_failures() const;
  /// Ends every call (their channels get their end), closes every connection and pull, stops
  /// listening. Idempotent; bounded by a few seconds.
  void stop();

  struct impl;

 private:
  rtsp_service() = default;
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::net::rtsp
