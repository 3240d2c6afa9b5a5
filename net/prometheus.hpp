#pragma once
/// The metrics snapshot (actors/metrics_actor.hpp JSON) in the Prometheus text exposition
/// format 0.0.4: counters per kind, gauges per actor, latency histograms with cumulative
/// buckets, _sum and _count.

#include <cstdint>
#include <string>

namespace sluice::net {

/// Empty input or bad JSON gives only the sluice_up gauge at 0.
std::string to_prometheus(const std::string& snapshot_json);

/// The server's own figures, outside the engine's snapshot: open connections, WebSocket flow
/// control (net/ws_session.hpp) and AudioSocket refusals. Exported from the first scrape,
/// zeros included.
struct server_figures {
  int64_t connections = 0;              ///< open now, on every port
  int64_t ws_streams = 0;               ///< WebSocket sessions with an open engine channel now
  int64_t ws_read_pauses = 0;           ///< reads paused by flow control, since the start
  int64_t ws_paused_now = 0;            ///< streams whose reads are paused now
  int64_t ws_buffered_audio_peak_ms = 0;  ///< the most audio one stream had in the server's hands
  int64_t ws_tls_half_closes = 0;       ///< wss streams half-closed with TLS 1.3 close_notify
  int64_t audiosocket_refused_source = 0;  ///< connections from outside audiosocket.allowed_sources
  int64_t audiosocket_refused_limit = 0;   ///< connections past audiosocket.max_connections
  bool draining = false;
};
std::string server_prometheus(const server_figures& f);

}  // namespace sluice::net
