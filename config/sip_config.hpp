#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [sip]: the SIP user agent server and its RTP receivers (net/sip/). Phones, trunks and PBXs
/// call sluice; each call's audio is transcribed like any other ingest.
struct sip_config {
  /// Listen for SIP at all (`sluice serve`).
  bool enabled = true;
  std::string host = "127.0.0.1";
  /// SIP port for UDP and TCP.
  int port = 5060;
  bool udp = true;
  bool tcp = true;
  /// SIP over TLS (sips:, RFC 3261 26.2) on tls_port too, with the certificate and private key
  /// of tls_cert_file / tls_key_file (PEM; the file may hold the chain). Media is SRTP when the
  /// offer asks for it (`srtp`), else plain RTP.
  bool tls = false;
  int tls_port = 5061;
  std::string tls_cert_file;
  std::string tls_key_file;
  /// Calls at once; one more is answered 503 Service Unavailable with Retry-After (as
  /// for no free RTP port, or an engine that refuses the call's channels).
  int max_calls = 64;
  /// RTP ports are taken from [rtp_port_min, rtp_port_max] (even ports; the odd one above each
  /// is its RTCP port). Fewer free ports than a call needs: 503 Service Unavailable.
  int rtp_port_min = 40000;
  int rtp_port_max = 40999;
  /// The jitter buffer holds an out-of-order packet at most this long before the gap in front
  /// of it is declared lost and concealed (ms): the delay the buffer adds at worst.
  int jitter_max_delay_ms = 80;
  /// Longest gap filled (ms of concealment or silence) for one loss or timestamp jump; a longer
  /// jump (a new talk spurt after DTX, a restarted sender) is not filled.
  int max_fill_ms = 1000;
  /// A call that receives no RTP for this long is hung up (BYE) (s).
  int rtp_timeout_s = 60;
  /// Longest call (s); then sluice hangs up (BYE).
  int max_call_s = 4 * 3600;
  /// Time between 180 Ringing and 200 OK (ms); 0 answers as soon as the engine has the
  /// call's channels. A PBX that expects ringing, or a test of CANCEL, sets it.
  int answer_delay_ms = 0;
  /// Retry-After sent with 503 (s).
  int retry_after_s = 5;
  /// Between the RTCP receiver reports sent for each RTP stream (ms), each randomised by 0.5-1.5
  /// (RFC 3550 6.3.1); 5000 is RFC 3550 6.2's recommended minimum. 0 sends no RTCP.
  int rtcp_interval_ms = 5000;
  /// Most a stream's RTP may carry (kbit/s, datagrams with their RTP header, a second of it as
  /// a burst); datagrams past it are dropped and counted (`over_rate`). Opus tops out at 510
  /// kbit/s and G.711 is 64; 0: no limit.
  int max_stream_kbps = 640;
  /// Who may place calls: IP addresses and networks, comma-separated ("10.0.0.0/8, 192.0.2.7");
  /// INVITEs from elsewhere get 403. Empty: anyone who reaches the port.
  std::string allowed_sources;
  /// SIP has no caller authentication of its own: on an address that is not loopback, sluice
  /// refuses to start unless `allowed_sources` names the callers or this says to serve anyone.
  bool allow_public = false;
  /// Whose calls these are (net/auth tenants): calls from an address in a tenant's list of
  /// `tenant_sources` ("acme: 10.1.0.0/16, 192.0.2.7; globex: 10.2.0.0/16") are that tenant's,
  /// the others `tenant`'s (empty: none). A call's tenant decides who sees it in /v1/calls and
  /// /v1/events, whose totals it counts in, and whose hotwords and redaction rules apply.
  std::string tenant;
  std::string tenant_sources;
  /// SRTP (RFC 3711) with keys in the SDP (SDES, RFC 4568): "allow" takes offers of SRTP
  /// (RTP/SAVP, or a=crypto on RTP/AVP) and of plain RTP; "require" answers plain RTP offers 488;
  /// "off" takes plain RTP only.
  std::string srtp = "allow";
  /// SDES keys are readable by anyone who sees the SIP: they are taken only from SIP over TLS
  /// unless this is set (a network the operator trusts). Without it, an RTP/SAVP offer over UDP
  /// or TCP gets 488 and a=crypto on RTP/AVP is answered as plain RTP.
  bool srtp_plain_signalling = false;

  template <class V>
  void visit(V&& v) {
    v("enabled", enabled, any_bool{}, "listen for SIP calls in `sluice serve`");
    v("host", host, non_empty{}, "address SIP and RTP listen on");
    v("port", port, range{1, 65535}, "SIP port, UDP and TCP");
    v("udp", udp, any_bool{}, "accept SIP over UDP");
    v("tcp", tcp, any_bool{}, "accept SIP over TCP");
    v("tls", tls, any_bool{}, "accept SIP over TLS on tls_port");
    v("tls_port", tls_port, range{1, 65535}, "SIP over TLS port");
    v("tls_cert_file", tls_cert_file, any_string{}, "PEM certificate (chain) for SIP over TLS");
    v("tls_key_file", tls_key_file, any_string{}, "PEM private key for SIP over TLS");
    v("max_calls", max_calls, range{1, 100000}, "SIP calls at once (one more gets 503)");
    v("rtp_port_min", rtp_port_min, range{1024, 65534}, "lowest RTP port");
    v("rtp_port_max", rtp_port_max, range{1025, 65535}, "highest RTP port");
    v("jitter_max_delay_ms", jitter_max_delay_ms, range{0, 2000},
      "longest wait for a late RTP packet before its gap is concealed (ms)");
    v("max_fill_ms", max_fill_ms, range{20, 60000}, "longest gap concealed or filled with silence (ms)");
    v("rtp_timeout_s", rtp_timeout_s, range{1, 86400}, "hang up a call without RTP this long (s)");
    v("max_call_s", max_call_s, range{1, 7 * 86400}, "longest SIP call (s)");
    v("answer_delay_ms", answer_delay_ms, range{0, 60000}, "ringing time before 200 OK (ms)");
    v("retry_after_s", retry_after_s, range{1, 3600}, "Retry-After with 503 (s)");
    v("rtcp_interval_ms", rtcp_interval_ms, range{0, 600000},
      "between RTCP receiver reports per stream, randomised 0.5-1.5 (ms); 0 sends none");
    v("max_stream_kbps", max_stream_kbps, range{0, 1000000}, "most RTP one stream may carry (kbit/s); 0: no limit");
    v("allowed_sources", allowed_sources, any_string{}, "IP addresses and networks that may call; empty: anyone");
    v("allow_public", allow_public, any_bool{}, "serve SIP on a non-loopback address with no allowed_sources");
    v("tenant", tenant, any_string{}, "tenant owning calls from addresses in no tenant_sources list; empty: none");
    v("tenant_sources", tenant_sources, any_string{},
      "tenants by caller address: \"acme: 10.1.0.0/16, 192.0.2.7; globex: 10.2.0.0/16\"");
    v("srtp", srtp, one_of{{"off", "allow", "require"}}, "SRTP with SDES keys: off, allow (either), require");
    v("srtp_plain_signalling", srtp_plain_signalling, any_bool{},
      "take SDES keys from SIP over UDP/TCP too (they are readable on the wire)");
  }
  std::string check() const {
    if (max_stream_kbps > 0 && max_stream_kbps < 16)
      return "sip.max_stream_kbps must be 0 (no limit) or at least 16 kbit/s";
    if (rtp_port_max < rtp_port_min + 1) return "sip.rtp_port_max must be above sip.rtp_port_min";
    if (rtcp_interval_ms > 0 && rtcp_interval_ms < 100)
      return "sip.rtcp_interval_ms must be 0 (no RTCP) or at least 100 ms";
    if (tls && (tls_cert_file.empty() || tls_key_file.empty()))
      return "sip.tls needs sip.tls_cert_file and sip.tls_key_file";
    if (tls && tls_port == port) return "sip.tls_port must differ from sip.port";
    if (srtp == "require" && !tls && !srtp_plain_signalling)
      return "sip.srtp = \"require\" needs sip.tls (SDES keys are taken only over SIP over TLS) or "
             "sip.srtp_plain_signalling = true";
    if (enabled && !udp && !tcp) return "sip.udp and sip.tcp are both false: set sip.enabled = false instead";
    return {};
  }
};

}  // namespace sluice::config
