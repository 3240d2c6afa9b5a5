#pragma once
/// One pulled RTSP stream (rtsp.pull): DESCRIBE, SETUP of each audio stream sluice takes (RTP
/// interleaved on the connection first; UDP to a port of the pool if the server answers 461),
/// PLAY, then the stream is a call until the server goes away (the connection drops, or no RTP
/// for rtsp.session_timeout_s), when the call ends ("server gone") and the pull reconnects after
/// a back-off (rtsp.pull_retry_min_ms doubling up to pull_retry_max_ms, reset once a stream
/// plays). A TEARDOWN request from the server (RTSP 2.0 servers send one) ends the call and the
/// pull. Keep-alive: GET_PARAMETER every half session timeout the server gave.
/// Credentials: rtsp://user:password@host/path answers a 401 with Digest (MD5, qop=auth or none)
/// or Basic (rtsp_auth.hpp); the password is never in a request line, a log line or the call's
/// metadata. Refused credentials are a failure like any other (back-off, then again).
///
/// Threading: runs on its own strand of the service's io_context; start() and stop() are
/// thread-safe.

#include <memory>
#include <mutex>
#include <string>

#include "net/rtsp/rtsp_context.hpp"

namespace sluice::net::rtsp {

class rtsp_pull : public std::enable_shared_from_this<rtsp_pull> {
 public:
  rtsp_pull(std::shared_ptr<rtsp_context> ctx, std::string url);
  ~rtsp_pull();
  void start();
  /// Sends TEARDOWN (best effort), ends the call ("stopped"), and stops reconnecting.
  void stop();
  /// Why the last connection failed ("" before any failure); thread-safe.
  std::string last_failure() const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
  mutable std::mutex failure_mu_;
  std::string failure_;
};

}  // namespace sluice::net::rtsp
