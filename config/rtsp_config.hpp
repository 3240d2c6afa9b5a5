#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [rtsp]: RTSP ingest (net/rtsp/). A push endpoint: ffmpeg (`-f rtsp`), GStreamer's
/// rtspclientsink or a camera/recorder ANNOUNCEs a stream and RECORDs it to
/// rtsp://host:port/<name>; and pulls: sluice DESCRIBEs/PLAYs the RTSP URLs of `pull` and
/// transcribes each as a call for as long as sluice runs, reconnecting when a server goes away.
/// Each push session or pulled stream is one call (source "rtsp", external id the URL path).
/// With [auth] keys, pushes need an API key (Basic, the key as password: rtsp://any:<key>@host/name);
/// without keys, bind it only where only your senders reach it. Pulls take credentials from their URLs.
struct rtsp_config {
  /// Accept RTSP pushes in `sluice serve` (the pulls of `pull` run whatever this says).
  bool enabled = true;
  std::string host = "127.0.0.1";
  /// 8554 is the port ffmpeg, GStreamer and the usual RTSP relays use; 0: any free port (tests).
  int port = 8554;
  /// Push sessions (ANNOUNCEd streams) at once; one more is answered 503. Open connections
  /// are bounded to twice this (a connection past it is closed at once).
  int max_sessions = 64;
  /// A session (or a connection that has not ANNOUNCEd) with no request and no RTP for this
  /// long is ended (s); the Session header tells the client (RFC 2326 12.37).
  int session_timeout_s = 60;
  /// Longest call (s); then the session is ended as by TEARDOWN.
  int max_call_s = 4 * 3600;
  /// Start line plus headers of one request (bytes); longer: 413 and the connection is closed.
  int max_header_bytes = 8192;
  /// Body (SDP) of one request (bytes); larger: 413 and the connection is closed.
  int max_body_bytes = 16384;
  /// Media of one ANNOUNCE (m= lines); more: 415.
  int max_media = 4;
  /// UDP ports for RTP of pushes over UDP (and pulls over UDP), one even port per stream.
  int rtp_port_min = 42000;
  int rtp_port_max = 42999;
  /// The longest hold of a packet behind a gap before it is concealed (ms).
  int jitter_max_delay_ms = 80;
  /// Longest gap concealed or filled with silence (ms).
  int max_fill_ms = 1000;
  /// The tenant that owns RTSP calls (net/auth); empty: none.
  std::string tenant;
  /// RTSP URLs to pull (comma-separated), each transcribed as a call while sluice serves.
  std::string pull;
  /// Back-off between reconnections of a pull whose server went away or refused (ms): the
  /// first wait, doubled per failure up to the maximum, reset once a stream plays.
  int pull_retry_min_ms = 500;
  int pull_retry_max_ms = 30000;
  /// RTCP receiver reports on each stream (RFC 3550 6.4.2) of pushes and pulls, sent this often
  /// on average (ms; randomised by 0.5-1.5): interleaved on the RTSP connection over TCP, to the
  /// peer's RTCP port over UDP. 0: none.
  int rtcp_interval_ms = 5000;
  /// Most a stream's RTP may carry (kbit/s, a second of it as a burst); packets past it are
  /// dropped and counted (`over_rate`). L16 at 48 kHz stereo is 1536 kbit/s; 0: no limit.
  int max_stream_kbps = 2048;
  /// Without [auth] keys pushes are open: on an address that is not loopback, sluice refuses to
  /// start unless keys are configured or this says to take pushes from anyone.
  bool allow_public = false;

  template <class V>
  void visit(V&& v) {
    v("enabled", enabled, any_bool{}, "accept RTSP pushes (ANNOUNCE/RECORD) in `sluice serve`");
    v("host", host, non_empty{}, "address RTSP and its RTP ports listen on");
    v("port", port, range{0, 65535}, "RTSP port (0: any free port)");
    v("max_sessions", max_sessions, range{1, 100000}, "push sessions at once (one more gets 503)");
    v("session_timeout_s", session_timeout_s, range{1, 86400}, "end a session silent this long (s)");
    v("max_call_s", max_call_s, range{1, 7 * 86400}, "longest RTSP call (s)");
    v("max_header_bytes", max_header_bytes, range{256, 1048576}, "start line and headers of a request (bytes)");
    v("max_body_bytes", max_body_bytes, range{256, 1048576}, "body of a request (bytes)");
    v("max_media", max_media, range{1, 64}, "m= lines in one ANNOUNCE");
    v("rtp_port_min", rtp_port_min, range{1024, 65534}, "lowest RTP port for RTSP over UDP");
    v("rtp_port_max", rtp_port_max, range{1025, 65535}, "highest RTP port for RTSP over UDP");
    v("jitter_max_delay_ms", jitter_max_delay_ms, range{0, 2000}, "longest wait for a late RTP packet (ms)");
    v("max_fill_ms", max_fill_ms, range{20, 60000}, "longest gap concealed or filled with silence (ms)");
    v("tenant", tenant, any_string{}, "tenant owning RTSP calls; empty: none");
    v("pull", pull, name_list{}, "RTSP URLs to pull and transcribe, comma-separated");
    v("pull_retry_min_ms", pull_retry_min_ms, range{10, 600000}, "first wait before a pull reconnects (ms)");
    v("pull_retry_max_ms", pull_retry_max_ms, range{10, 3600000}, "longest wait before a pull reconnects (ms)");
    v("rtcp_interval_ms", rtcp_interval_ms, range{0, 600000}, "mean interval of RTCP receiver reports (ms); 0: none");
    v("max_stream_kbps", max_stream_kbps, range{0, 1000000}, "most RTP one stream may carry (kbit/s); 0: no limit");
    v("allow_public", allow_public, any_bool{}, "take pushes on a non-loopback address without API keys");
  }
  std::string check() const {
    if (max_stream_kbps > 0 && max_stream_kbps < 16)
      return "rtsp.max_stream_kbps must be 0 (no limit) or at least 16 kbit/s";
    if (rtp_port_max < rtp_port_min + 1) return "rtsp.rtp_port_max must be above rtsp.rtp_port_min";
    if (rtcp_interval_ms > 0 && rtcp_interval_ms < 100)
      return "rtsp.rtcp_interval_ms must be 0 (no RTCP) or at least 100 ms";
    if (pull_retry_max_ms < pull_retry_min_ms) return "rtsp.pull_retry_max_ms must be at least rtsp.pull_retry_min_ms";
    return {};
  }
};

}  // namespace sluice::config
