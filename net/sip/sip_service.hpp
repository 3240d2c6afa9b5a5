#pragma once
/// The SIP user agent server of `sluice serve` ([sip], net/sip/): phones, trunks and PBXs call
/// sluice, and each call's audio is transcribed like any other ingest.
///
/// Why sofia-sip (Debian libsofia-sip-ua-dev): of the SIP stacks Debian 12 packages, it is the one
/// the field runs at scale (FreeSWITCH's mod_sofia), it is a complete RFC 3261 user agent (NTA
/// transactions with every retransmission timer, NUA dialogs with CANCEL, re-INVITE, OPTIONS,
/// Max-Forwards, 100 Trying) plus an SDP parser, and it runs every call on one event loop with no
/// thread per call. eXosip2 and reSIProcate are not in Debian 12; libosip2 alone is a parser and
/// transaction state machine that would leave transports, dialogs and timers to us; libre (1.1,
/// baresip's) wants to own the process's main loop. sofia's loop owns its SIP sockets, so it runs
/// on one thread of its own; media never touches it: RTP runs on Asio (rtp_receiver.hpp), and
/// each call's channels are CAF actors (channel_bridge.hpp). This file is the glue.
///
/// SIPREC (RFC 7866): a multipart INVITE with recording metadata (net/sip/siprec_metadata.hpp)
/// is a call of source "siprec" whose channels are named by the participant sending each stream.
///
/// A call: INVITE with an SDP offer -> 100 Trying (sofia) -> ports from the pool and one engine
/// channel per accepted audio stream (the engine may refuse: 503) -> 180 Ringing -> 200 OK with
/// the answer (after [sip] answer_delay_ms) -> RTP until BYE (either side), CANCEL, the RTP
/// timeout or max_call_s. The call is in the registry (source "sip", external id = Call-ID)
/// from the INVITE on; it ends once every channel has delivered its last final. Refusals: 503
/// with Retry-After past max_calls or with no free RTP port, 488 for an offer without a codec
/// we take (or no offer), 415 for a body that is not SDP, 400 (or nothing) from sofia for
/// malformed requests. Max-Forwards is sofia's: it adds 70 to the BYEs sluice sends; a request
/// arriving with 0 has reached its destination and is handled (RFC 3261 16.3 binds proxies).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "actors/engine.hpp"
#include "config/error.hpp"
#include "config/sip_config.hpp"
#include "net/calls/call_registry.hpp"
#include "net/prometheus.hpp"

namespace sluice::net::sip {

class sip_service {
 public:
  /// Listens on [sip] host:port (UDP and/or TCP). errc::io when the port cannot be bound;
  /// errc::invalid_config for a bad host. `calls` must outlive the service's calls: stop()
  /// before the registry's owner goes.
  static result<std::unique_ptr<sip_service>> start(actors::engine& engine,
                                                    std::shared_ptr<calls::call_registry> calls,
                                                    const config::sip_config& cfg);
  ~sip_service();
  sip_service(const sip_service&) = delete;
  sip_service& operator=(const sip_service&) = delete;

  uint16_t port() const;
  /// Calls between INVITE and their end (thread-safe).
  int live_calls() const;
  /// Reads the service's figures for /metrics (net/prometheus.hpp: calls, refusals by reason,
  /// SRTP streams and failures). The function holds the counters, not the service: it may be
  /// called after the service is gone (the server's /metrics outlives it in `sluice serve`).
  std::function<sip_figures()> figures_source() const;
  /// Hangs up every call (BYE; 503 to unanswered ones), sends each channel its end, stops
  /// listening. Idempotent; bounded by a few seconds.
  void stop();

  struct impl;

 private:
  sip_service() = default;
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::net::sip
