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
#include <memory>

#include "actors/engine.hpp"
#include "config/error.hpp"
#include "config/rtsp_config.hpp"
#include "net/calls/call_registry.hpp"

namespace sluice::net::rtsp {

class rtsp_service {
 public:
  /// Listens on rtsp.host:port when `cfg.enabled` and starts the pulls of `cfg.pull`.
  /// errc::io when the port cannot be bound, errc::invalid_config for a bad host or pull URL.
  /// `calls` must outlive the service's calls: stop() first.
  static result<std::unique_ptr<rtsp_service>> start(actors::engine& engine,
                                                     std::shared_ptr<calls::call_registry> calls,
                                                     const config::rtsp_config& cfg);
  ~rtsp_service();
  rtsp_service(const rtsp_service&) = delete;
  rtsp_service& operator=(const rtsp_service&) = delete;

  /// The bound port (0 when pushes are disabled).
  uint16_t port() const;
  /// ANNOUNCEd push sessions now (thread-safe).
  int live_sessions() const;
  /// Open push connections now (thread-safe).
  int connections() const;
  /// Ends every call (their channels get their end), closes every connection and pull, stops
  /// listening. Idempotent; bounded by a few seconds.
  void stop();

  struct impl;

 private:
  rtsp_service() = default;
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::net::rtsp
