#pragma once
/// One RTSP connection of the push endpoint (RFC 2326 as ffmpeg and GStreamer speak it):
/// OPTIONS, ANNOUNCE (SDP), SETUP (RTP interleaved on this connection, or UDP unicast to a
/// port of the pool), RECORD (the call starts; the reply waits until the engine has opened its
/// channels), GET_PARAMETER / SET_PARAMETER (keep-alive), TEARDOWN (the call ends). The call
/// also ends when the connection drops, after session_timeout_s without a request or RTP, after
/// max_call_s, or when the server stops; in every case the held audio is released and each
/// channel finishes its last utterance.
///
/// Refusals (each answered with the status and a short reason in the body, never a crash): a
/// missing or bad CSeq 400; another RTSP version 505; an unknown method 501; DESCRIBE/PLAY/PAUSE
/// 405 (this endpoint only records); Require 551; a method out of order 455; a wrong Session
/// 454; no usable audio in the SDP, or a body that is not SDP 415; a transport other than RTP
/// unicast over TCP or UDP 461; past max_sessions, no free RTP port or an engine that refuses
/// the channels 503; headers or body over their bound 413 (then the connection is closed, as
/// the stream cannot be resynchronised).
///
/// Threading: everything runs on the session's strand; the server calls start() and stop().

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "net/rtsp/rtsp_context.hpp"

namespace sluice::net::rtsp {

class rtsp_session : public std::enable_shared_from_this<rtsp_session> {
 public:
  rtsp_session(boost::asio::ip::tcp::socket socket, std::shared_ptr<rtsp_context> ctx);
  ~rtsp_session();
  void start();
  /// Ends the call (if any) for `reason` and closes the connection. Thread-safe, idempotent.
  void stop(const std::string& reason);

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::net::rtsp
