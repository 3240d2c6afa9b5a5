#pragma once
/// One RTP stream of a call: a UDP socket on a port from the pool, the jitter buffer, the
/// decoder and RFC 4733 DTMF. Runs on its own strand of the SIP service's io_context; what it
/// hears it hands to its sinks from that strand (audio as 16-bit little-endian PCM bytes at
/// the codec's rate, DTMF digits when they end).
///
/// Symmetric RTP: the first source address heard is latched, packets from any other are
/// dropped (counted), so a stray or hostile sender cannot inject audio into a call, while a
/// peer behind NAT (whose address differs from its SDP) is still heard. Hostile datagrams
/// (not RTP, wrong payload type) are dropped and counted, never fatal.
///
/// SRTP (set_srtp): every datagram is authenticated and decrypted before it is read, and only an
/// authentic one latches the peer's address; forged, damaged or replayed packets are dropped and
/// counted (srtp_auth_failed, srtp_replayed). RTCP is SRTCP both ways.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "config/error.hpp"
#include "net/sip/jitter_buffer.hpp"
#include "net/sip/port_pool.hpp"
#include "net/sip/rate_limiter.hpp"
#include "net/sip/rtcp_stats.hpp"
#include "net/sip/rtp_audio_decoder.hpp"
#include "net/sip/sdp_offer.hpp"
#include "net/sip/srtp_session.hpp"

namespace sluice::net::sip {

struct rtp_sinks {
  std::function<void(std::vector<uint8_t> pcm_s16le)> audio;
  std::function<void(char digit, int duration_ms)> dtmf;
};

/// Counters of one stream, readable from any thread.
struct rtp_counters {
  std::atomic<uint64_t> datagrams{0}, not_rtp{0}, foreign_source{0}, packets_lost{0}, late{0}, reordered{0},
      concealed_samples{0};
  /// Datagrams from the stream's peer dropped past [sip] max_stream_kbps.
  std::atomic<uint64_t> over_rate{0};
  /// RTCP: compound packets received, refused (not RTCP), reports sent; the peer's BYE seen.
  std::atomic<uint64_t> rtcp_received{0}, rtcp_invalid{0}, rtcp_sent{0};
  /// RFC 3389 comfort noise packets received, and the samples filled with their noise.
  std::atomic<uint64_t> comfort_noise_packets{0}, comfort_noise_samples{0};
  std::atomic<bool> rtcp_bye{false};
  std::atomic<int64_t> max_hold_ms{0};
  /// SRTP: datagrams whose authentication failed (another key, forged, damaged), and copies or
  /// too-old packets refused by the replay check; SRTCP counts in the same two.
  std::atomic<uint64_t> srtp_auth_failed{0}, srtp_replayed{0};
};

class rtp_receiver : public std::enable_shared_from_this<rtp_receiver> {
 public:
  /// Binds a port of the pool on `host`; errc::limit_exceeded when no port is free (or bindable).
  static result<std::shared_ptr<rtp_receiver>> open(boost::asio::io_context& ioc, const std::string& host,
                                                    std::shared_ptr<port_pool> pool, jitter_buffer_config jitter,
                                                    codec_choice codec, int telephone_event_pt, rtp_sinks sinks);
  ~rtp_receiver();

  uint16_t port() const { return port_; }
  /// Where audio and DTMF go; only before start().
  void set_sinks(rtp_sinks sinks) { sinks_ = std::move(sinks); }
  /// At most `kbps` of datagrams from the peer (rate_limiter.hpp); 0: no limit. Only before start().
  void set_rate_limit(int kbps) { rate_ = rate_limiter::kbps(kbps); }
  /// SRTP: `inbound` checks and decrypts what the peer sends, `outbound` protects our RTCP.
  /// Only before start().
  void set_srtp(std::unique_ptr<srtp_session> inbound, std::unique_ptr<srtp_session> outbound) {
    srtp_in_ = std::move(inbound);
    srtp_out_ = std::move(outbound);
  }
  /// The peer's new key (a re-INVITE re-keying the stream): packets are checked with it from
  /// the next one read. Thread-safe.
  void rekey(std::unique_ptr<srtp_session> inbound);
  /// Sends RTCP receiver reports (RFC 3550 6.4.2) about the stream's source to `remote` every
  /// `interval_ms` (randomised by 0.5-1.5 as 6.3.1 says; the last, with a BYE, at stop()) and
  /// reads the peer's SRs (for LSR/DLSR) and BYE: on the RTP port when `mux` (RFC 5761; then
  /// reports go to the RTP peer's address), else on a socket of its own at port() + 1. A
  /// report goes to where the peer's RTCP comes from once it has been heard (symmetric RTCP).
  /// Only before start(). errc::io when port() + 1 cannot be bound (the call goes on without).
  result<void> enable_rtcp(const std::string& host, bool mux, boost::asio::ip::udp::endpoint remote, int interval_ms,
                           std::string cname);
  /// Starts receiving. Thread-safe.
  void start();
  /// Stops receiving: reads the datagrams the socket still queues, releases what the jitter
  /// buffer holds to the sinks, closes the socket.
  /// Thread-safe and idempotent; `done` (if any) runs on the strand after the last sink call.
  void stop(std::function<void()> done = {});
  /// Steady-clock ms of the last RTP packet (or of start()); for the RTP timeout.
  int64_t last_packet_ms() const { return last_packet_ms_; }
  const rtp_counters& counters() const { return counters_; }
  int sample_rate() const { return decoder_.codec().sample_rate; }

 private:
  rtp_receiver(boost::asio::io_context& ioc, std::shared_ptr<port_pool> pool, jitter_buffer_config jitter,
               codec_choice codec, int telephone_event_pt, rtp_sinks sinks);
  void do_receive();
  void finish_stop();
  void on_datagram(std::size_t n);
  void deliver(std::vector<playout_item> items);
  void on_event(const playout_item& item);
  void arm_gap_timer();
  void publish_stats();
  void do_receive_rtcp();
  void on_rtcp_datagram(std::size_t n);
  // An RTCP compound (decrypted, when SRTCP) read, or counted as invalid.
  void take_rtcp(std::span<const uint8_t> datagram, const boost::asio::ip::udp::endpoint& from);
  void on_rtcp(std::span<const uint8_t> datagram, const boost::asio::ip::udp::endpoint& from);
  void arm_rtcp_timer();
  void send_report(bool bye);

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::ip::udp::socket socket_;
  boost::asio::steady_timer gap_timer_;
  std::shared_ptr<port_pool> pool_;
  uint16_t port_ = 0;
  jitter_buffer jitter_;
  rtp_audio_decoder decoder_;
  int te_pt_;
  rtp_sinks sinks_;
  std::vector<uint8_t> buf_;
  boost::asio::ip::udp::endpoint from_, peer_;
  bool latched_ = false, stopped_ = false, timer_armed_ = false;
  // stop() was asked while a receive was in flight (receiving_): its handler finishes the stop.
  bool stopping_ = false, receiving_ = false;
  std::function<void()> stop_done_;
  // RFC 4733: an event is reported once, at its first end packet (they are sent three times).
  bool event_open_ = false;
  uint32_t event_ts_ = 0;
  uint8_t event_code_ = 0;
  uint16_t event_duration_ = 0;
  bool reported_ts_valid_ = false;
  std::atomic<int64_t> last_packet_ms_{0};
  rtp_counters counters_;
  rate_limiter rate_;
  // RTCP (enable_rtcp); strand only.
  bool rtcp_ = false, rtcp_mux_ = false, rtcp_peer_heard_ = false;
  boost::asio::ip::udp::socket rtcp_socket_;
  boost::asio::steady_timer rtcp_timer_;
  boost::asio::ip::udp::endpoint rtcp_remote_, rtcp_from_, rtcp_recv_from_;
  std::vector<uint8_t> rtcp_buf_;
  int rtcp_interval_ms_ = 0;
  uint32_t rtcp_ssrc_ = 0;
  std::string rtcp_cname_;
  rtcp_stats rtcp_stats_;
  // SRTP (set_srtp); strand only after start().
  std::unique_ptr<srtp_session> srtp_in_, srtp_out_;
  // Checks and decrypts `data` in place; a failure is counted (a malformed packet in `malformed`).
  bool srtp_checked(uint8_t* data, std::size_t& size, bool rtcp, std::atomic<uint64_t>& malformed);
};

}  // namespace sluice::net::sip
