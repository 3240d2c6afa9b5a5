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

/// The SIP service's figures (net/sip/sip_service.hpp), since its start; exported from the
/// first scrape, zeros included. Refusals by reason: "source" 403 (outside sip.allowed_sources),
/// "busy" 503 (sip.max_calls, no free RTP port, the engine full, shutting down), "offer" 488
/// (no SDP, no stream sluice takes, SRTP policy), "request" 400/415 (a body it cannot read).
struct sip_figures {
  int64_t live = 0;   ///< calls now
  int64_t calls = 0;  ///< calls taken (registered)
  int64_t refused_source = 0, refused_busy = 0, refused_offer = 0, refused_request = 0;
  int64_t srtp_streams = 0;      ///< streams taken with SRTP
  int64_t srtp_auth_failed = 0;  ///< SRTP/SRTCP packets that failed authentication, of ended streams
  int64_t srtp_replayed = 0;     ///< and those refused by the replay check
};
std::string sip_prometheus(const sip_figures& f);

}  // namespace sluice::net
