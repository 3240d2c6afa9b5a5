#pragma once
/// A reordering jitter buffer with a bounded delay, for audio that is transcribed rather than
/// played: nothing waits for a playout clock. A packet is released as soon as every packet
/// before it has been released; a gap (a lost or late packet) holds later packets back at most
/// `max_delay_ms` after the first of them arrived, then it is declared lost and filled with a
/// concealment item of the gap's length. So in-order audio passes with no delay, reordering
/// within the bound costs nothing, and the worst added delay is the bound.
///
/// Pure and single-threaded: the caller passes arrival times (ms, any monotonic origin) and
/// each packet's duration in RTP timestamp units (0 for packets that carry no audio time, such
/// as RFC 4733 events, which share the sequence space). Handles 16-bit sequence wrap, a new
/// SSRC or a sequence jump (a restarted sender: what is held is released, then it starts
/// over), duplicates and packets that arrive after their slot was given up (dropped).

#include <cstdint>
#include <map>
#include <vector>

#include "net/sip/rtp_packet.hpp"

namespace sluice::net::sip {

struct jitter_buffer_config {
  int clock_rate = 8000;     ///< RTP timestamp units per second
  int max_delay_ms = 80;     ///< longest hold of a packet behind a gap
  int max_fill_ms = 1000;    ///< longest gap filled (loss or timestamp jump); longer: not filled
  int max_packets = 512;     ///< held packets at most; past it the oldest gap is given up at once
};

/// What the buffer releases, in order.
struct playout_item {
  enum class kind {
    packet,   ///< a received packet (payload_type, payload, timestamp)
    lost,     ///< packets lost: conceal `duration` timestamp units
    silence,  ///< a timestamp gap with no missing packet (DTX, silence suppression): `duration` units
  };
  kind what = kind::packet;
  uint8_t payload_type = 0;
  bool marker = false;
  uint32_t timestamp = 0;
  uint32_t duration = 0;  ///< timestamp units (packet: as given to push)
  uint16_t seq = 0;
  std::vector<uint8_t> payload;
};

struct jitter_buffer_stats {
  uint64_t received = 0;    ///< packets pushed
  uint64_t released = 0;    ///< packets released
  uint64_t lost = 0;        ///< packets never received whose gap was given up
  uint64_t late = 0;        ///< arrived after their gap was given up (dropped)
  uint64_t duplicates = 0;  ///< dropped
  uint64_t reordered = 0;   ///< arrived after a later packet, in time
  uint64_t resyncs = 0;     ///< new SSRC or sequence jump
  int64_t max_hold_ms = 0;  ///< longest time a released packet waited in the buffer
};

class jitter_buffer {
 public:
  explicit jitter_buffer(jitter_buffer_config cfg);

  /// Takes a copy of the packet (its payload) arriving at `now_ms`; `duration` in timestamp units.
  void push(const rtp_packet& p, uint32_t duration, int64_t now_ms);
  /// Everything that may be released at `now_ms`, in order. Call it after each push and on a
  /// timer (a gap is only given up when pop runs).
  std::vector<playout_item> pop(int64_t now_ms);
  /// Releases everything held (gaps filled), e.g. when the call ends.
  std::vector<playout_item> flush();

  /// When pop() will give up the gap in front of the held packets (ms, the clock of push);
  /// -1 when nothing is held. A caller with a timer arms it for this moment.
  int64_t give_up_at_ms() const;

  const jitter_buffer_stats& stats() const { return stats_; }
  std::size_t held() const { return held_.size(); }

 private:
  struct held_packet {
    playout_item item;
    int64_t arrival_ms = 0;
  };
  void release(held_packet&& h, int64_t now_ms, std::vector<playout_item>& out);
  void give_up_gap(std::vector<playout_item>& out);
  void drain_all(std::vector<playout_item>& out);
  int64_t extend(uint16_t seq) const;

  jitter_buffer_config cfg_;
  jitter_buffer_stats stats_;
  bool started_ = false;
  uint32_t ssrc_ = 0;
  int64_t next_ = 0;  // extended sequence number of the next packet to release
  int64_t newest_ = 0;  // highest extended sequence number pushed
  bool have_expected_ts_ = false;
  uint32_t expected_ts_ = 0;  // where the next packet's audio should start
  uint32_t last_duration_ = 0;
  std::map<int64_t, held_packet> held_;
  std::vector<playout_item> pending_;  // released by a resync in push, returned by the next pop
};

}  // namespace sluice::net::sip
