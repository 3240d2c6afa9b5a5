#pragma once
/// One RTSP audio stream's RTP path, whatever carries the packets (interleaved on the RTSP
/// connection, or UDP): RTP parsing, the SIP side's jitter buffer (reordering, bounded delay,
/// loss as concealment items), and decoding to 16-bit little-endian mono PCM at the codec's
/// rate: PCMU, PCMA and G.722 through the SIP RTP decoder (with its loss concealment); L16
/// here (big-endian samples, RFC 3551 4.5.11; stereo mixed down; losses as silence).
///
/// It also keeps the sender's reception statistics (RFC 3550 appendix A, the SIP side's
/// rtcp_stats) and writes the RTCP receiver reports the session or pull sends back, on the
/// interleaved RTCP channel or to the peer's RTCP port; the sender's SRs give their LSR/DLSR.
///
/// Not thread-safe: one owner (the session's strand) calls it. Hostile packets (not RTP, or
/// of another payload type, or not valid RTCP) are counted and dropped.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/rtsp/rtsp_sdp.hpp"
#include "net/sip/jitter_buffer.hpp"
#include "net/sip/rate_limiter.hpp"
#include "net/sip/rtcp_stats.hpp"
#include "net/sip/rtp_audio_decoder.hpp"

namespace sluice::net::rtsp {

struct rtp_stream_counters {
  uint64_t packets = 0, not_rtp = 0, other_payload = 0, over_rate = 0;
  uint64_t rtcp_received = 0, rtcp_invalid = 0, sender_reports = 0, rtcp_sent = 0;
};

class rtp_audio_stream {
 public:
  using sink = std::function<void(std::vector<uint8_t> pcm_s16le)>;
  /// `max_kbps`: most RTP the stream may carry (kbit/s, sip::rate_limiter); 0: no limit.
  rtp_audio_stream(const rtsp_media& media, sip::jitter_buffer_config jitter, sink out, int max_kbps = 0);

  /// One RTP packet that arrived at `now_us` (steady clock, microseconds).
  void on_packet(std::span<const uint8_t> bytes, int64_t now_us);
  /// One RTCP datagram (or interleaved frame) from the sender at `now_us`: a valid compound is
  /// counted and its SR, if any, times the next reports; anything else is counted and dropped.
  void on_rtcp(std::span<const uint8_t> bytes, int64_t now_us);
  /// A compound receiver report (RR on the sender's SSRC, SDES CNAME `cname`, a BYE when `bye`)
  /// as of `now_us`, starting the next report interval; empty while no RTP has been heard.
  std::vector<uint8_t> receiver_report(int64_t now_us, std::string_view cname, bool bye = false);
  /// A report went out (handed to the connection's writer, or sent as a datagram): counted.
  void report_sent() { ++counters_.rtcp_sent; }
  /// Gives up gaps whose wait is over (call it on a timer).
  void tick(int64_t now_ms);
  /// Releases everything held (the stream is over).
  void flush();
  int sample_rate() const { return media_.sample_rate; }
  /// Packets, losses, concealment, for the call's metadata.
  nlohmann::json stats() const;

 private:
  void deliver(const std::vector<sip::playout_item>& items);
  void decode_l16(const sip::playout_item& item, std::vector<int16_t>& pcm) const;

  rtsp_media media_;
  sip::jitter_buffer jitter_;
  std::unique_ptr<sip::rtp_audio_decoder> decoder_;  // not for L16
  sink out_;
  rtp_stream_counters counters_;
  uint64_t concealed_samples_ = 0;
  sip::rtcp_stats rtcp_;
  sip::rate_limiter rate_;
  uint32_t own_ssrc_;  // the SSRC our reports come from (random)
};

}  // namespace sluice::net::rtsp
