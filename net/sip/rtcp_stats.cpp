#include "net/sip/rtcp_stats.hpp"

#include <algorithm>
#include <cstdlib>
#include <random>

namespace sluice::net::sip {

int64_t report_delay_ms(int interval_ms) {
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> factor(0.5, 1.5);
  return static_cast<int64_t>(interval_ms * factor(rng));
}

namespace {
// RFC 3550 A.1's bounds: a jump ahead of more than this is not loss but a restart (or junk),
// a step back of up to max_misorder is a late packet.
constexpr uint16_t max_dropout = 3000;
constexpr uint16_t max_misorder = 100;
constexpr uint32_t seq_mod = 1u << 16;
constexpr int64_t us_per_s = 1'000'000;
constexpr int64_t dlsr_units_per_s = 65536;
constexpr int jitter_shift = 4;  // the 1/16 gain of A.8
}  // namespace

void rtcp_stats::init_sequence(uint16_t seq) {
  base_seq_ = seq;
  max_seq_ = seq;
  bad_seq_ = seq_mod + 1;  // no sequence number matches
  cycles_ = 0;
  received_ = 0;
  expected_prior_ = 0;
  received_prior_ = 0;
}

void rtcp_stats::on_rtp(uint32_t ssrc, uint16_t seq, uint32_t timestamp, bool timed, int64_t arrival_us) {
  if (!started_ || ssrc != ssrc_) {
    // A new source (or the first): its own statistics from here.
    started_ = true;
    ssrc_ = ssrc;
    init_sequence(seq);
    last_transit_.reset();
    jitter16_ = 0;
  } else {
    const auto delta = static_cast<uint16_t>(seq - max_seq_);
    if (delta < max_dropout) {
      if (seq < max_seq_) cycles_ += seq_mod;  // wrapped
      max_seq_ = seq;
    } else if (delta <= seq_mod - max_misorder) {
      // A big jump: believed only when the next packet follows it (the sender restarted).
      if (seq == bad_seq_) {
        init_sequence(seq);
      } else {
        bad_seq_ = (seq + 1u) & (seq_mod - 1);
        return;
      }
    }
    // else: a duplicate or late packet, counted as received.
  }
  ++received_;
  if (!timed) return;
  // A.8: transit time in timestamp units; only differences matter, so the clocks' offset cancels.
  const int64_t arrival = arrival_us * clock_rate_ / us_per_s;
  const int64_t transit = arrival - static_cast<int64_t>(timestamp);
  if (last_transit_) {
    // The timestamp is 32-bit and wraps: the difference of transits is taken modulo 2^32.
    const auto d = static_cast<int32_t>(static_cast<uint32_t>(transit - *last_transit_));
    const auto ad = static_cast<uint32_t>(std::abs(static_cast<int64_t>(d)));
    jitter16_ += ad - ((jitter16_ + (1u << (jitter_shift - 1))) >> jitter_shift);
  }
  last_transit_ = transit;
}

void rtcp_stats::on_sender_report(uint64_t ntp, int64_t arrival_us) {
  lsr_ = ntp_middle32(ntp);
  sr_arrival_us_ = arrival_us;
}

rtcp_report_block rtcp_stats::report(int64_t now_us) {
  rtcp_report_block b;
  b.ssrc = ssrc_;
  const uint32_t extended_max = cycles_ + max_seq_;
  const uint32_t expected = extended_max - base_seq_ + 1;
  const int64_t lost = static_cast<int64_t>(expected) - static_cast<int64_t>(received_);
  b.cumulative_lost = static_cast<int32_t>(std::clamp<int64_t>(lost, -0x800000, 0x7fffff));
  b.highest_seq = extended_max;
  const uint32_t expected_interval = expected - expected_prior_;
  const uint32_t received_interval = received_ - received_prior_;
  expected_prior_ = expected;
  received_prior_ = received_;
  const int64_t lost_interval = static_cast<int64_t>(expected_interval) - static_cast<int64_t>(received_interval);
  b.fraction_lost = (expected_interval == 0 || lost_interval <= 0)
                        ? 0
                        : static_cast<uint8_t>(std::min<int64_t>((lost_interval << 8) / expected_interval, 255));
  b.jitter = jitter16_ >> jitter_shift;
  if (sr_arrival_us_) {
    b.lsr = lsr_;
    b.dlsr = static_cast<uint32_t>((now_us - *sr_arrival_us_) * dlsr_units_per_s / us_per_s);
  }
  return b;
}

}  // namespace sluice::net::sip
