#pragma once
/// The reception statistics of one RTP source that an RTCP receiver report carries, kept as
/// RFC 3550 appendix A says: sequence numbers extended across wraps with a restart after a big
/// jump (A.1), expected and lost packets and the fraction lost since the last report (A.3), the
/// interarrival jitter (A.8), and LSR/DLSR from the sender's last SR (6.4.1). Pure; one per
/// stream; not thread-safe.

#include <cstdint>
#include <optional>

#include "net/sip/rtcp_packet.hpp"

namespace sluice::net::sip {

/// The wait before the next report: `interval_ms` times a random factor in [0.5, 1.5]
/// (RFC 3550 6.3.1, so that the reports of many receivers do not synchronise).
int64_t report_delay_ms(int interval_ms);

class rtcp_stats {
 public:
  /// `clock_rate`: RTP timestamp units per second of the stream's codec (jitter's unit).
  explicit rtcp_stats(int clock_rate) : clock_rate_(clock_rate) {}

  /// A packet of the source arrived at `arrival_us` (any monotonic clock, microseconds).
  /// `timed`: its timestamp is the sampling instant of audio (false for RFC 4733 events,
  /// whose timestamp is the event's start, and comfort noise): only timed packets feed jitter.
  void on_rtp(uint32_t ssrc, uint16_t seq, uint32_t timestamp, bool timed, int64_t arrival_us);
  /// The source's SR (its NTP time) arrived at `arrival_us`.
  void on_sender_report(uint64_t ntp, int64_t arrival_us);

  /// A source has been heard (a report has something to say).
  bool has_source() const { return started_; }
  /// The report block as of `now_us`; starts the next interval (fraction lost is per interval).
  rtcp_report_block report(int64_t now_us);

 private:
  void init_sequence(uint16_t seq);

  int clock_rate_;
  bool started_ = false;
  uint32_t ssrc_ = 0;
  uint16_t max_seq_ = 0;
  uint32_t cycles_ = 0, base_seq_ = 0, bad_seq_ = 0, received_ = 0;
  uint32_t expected_prior_ = 0, received_prior_ = 0;
  // Jitter in 1/16 timestamp units (A.8's integer form).
  uint32_t jitter16_ = 0;
  std::optional<int64_t> last_transit_;
  uint32_t lsr_ = 0;
  std::optional<int64_t> sr_arrival_us_;
};

}  // namespace sluice::net::sip
