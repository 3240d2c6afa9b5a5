// The jitter buffer with explicit arrival times: what it releases, when, and what it counts,
// for in-order, reordered, lost, duplicated, late and restarted streams. Expected outputs are
// worked out from the packets sent (20 ms = 160 timestamp units at 8 kHz).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "net/sip/jitter_buffer.hpp"

using namespace sluice::net::sip;

namespace {
constexpr uint32_t frame = 160;  // 20 ms at 8 kHz

jitter_buffer_config cfg(int max_delay_ms = 60) {
  jitter_buffer_config c;
  c.clock_rate = 8000;
  c.max_delay_ms = max_delay_ms;
  c.max_fill_ms = 1000;
  return c;
}

struct sender {
  uint32_t ssrc = 0x1234;
  std::vector<uint8_t> bytes;
  rtp_packet make(uint16_t seq, uint32_t ts) {
    bytes.assign(frame, static_cast<uint8_t>(seq));
    rtp_packet p;
    p.seq = seq;
    p.timestamp = ts;
    p.ssrc = ssrc;
    p.payload = bytes;
    return p;
  }
};

std::vector<uint16_t> seqs(const std::vector<playout_item>& items) {
  std::vector<uint16_t> s;
  for (const auto& i : items)
    if (i.what == playout_item::kind::packet) s.push_back(i.seq);
  return s;
}
}  // namespace

TEST_SUITE("sip jitter buffer") {
  TEST_CASE("in-order packets pass at once, across the 16-bit sequence wrap") {
    jitter_buffer jb(cfg());
    sender s;
    std::vector<uint16_t> out;
    for (int i = 0; i < 6; ++i) {
      const auto seq = static_cast<uint16_t>(65533 + i);
      jb.push(s.make(seq, 1000 + i * frame), frame, i * 20);
      auto items = jb.pop(i * 20);
      REQUIRE(items.size() == 1);  // released in the same call: no delay
      out.push_back(items[0].seq);
    }
    CHECK(out == std::vector<uint16_t>{65533, 65534, 65535, 0, 1, 2});
    CHECK(jb.stats().lost == 0);
    CHECK(jb.stats().max_hold_ms == 0);
  }

  TEST_CASE("a swapped pair is put back in order without loss, within the delay bound") {
    jitter_buffer jb(cfg());
    sender s;
    jb.push(s.make(10, 0), frame, 0);
    CHECK(seqs(jb.pop(0)) == std::vector<uint16_t>{10});
    jb.push(s.make(12, 2 * frame), frame, 20);
    CHECK(jb.pop(20).empty());  // 11 is missing: 12 waits
    jb.push(s.make(11, frame), frame, 30);
    CHECK(seqs(jb.pop(30)) == std::vector<uint16_t>{11, 12});
    CHECK(jb.stats().reordered == 1);
    CHECK(jb.stats().lost == 0);
    CHECK(jb.stats().max_hold_ms == 10);
  }

  TEST_CASE("a lost packet is given up after the bound and concealed for its length") {
    jitter_buffer jb(cfg(60));
    sender s;
    jb.push(s.make(1, 0), frame, 0);
    (void)jb.pop(0);
    jb.push(s.make(3, 2 * frame), frame, 40);
    CHECK(jb.pop(40).empty());
    CHECK(jb.give_up_at_ms() == 100);  // 3 arrived at 40, waits at most 60
    CHECK(jb.pop(99).empty());  // 59 ms held: still waiting
    auto items = jb.pop(100);   // 60 ms: given up
    REQUIRE(items.size() == 2);
    CHECK(items[0].what == playout_item::kind::lost);
    CHECK(items[0].duration == frame);
    CHECK(items[1].seq == 3);
    CHECK(jb.stats().lost == 1);
    CHECK(jb.give_up_at_ms() == -1);  // nothing held
    // The packet that was given up arrives after all: dropped, counted as late.
    jb.push(s.make(2, frame), frame, 120);
    CHECK(jb.pop(120).empty());
    CHECK(jb.stats().late == 1);
  }

  TEST_CASE("duplicates are dropped, whether still held or already released") {
    jitter_buffer jb(cfg());
    sender s;
    jb.push(s.make(1, 0), frame, 0);
    jb.push(s.make(3, 2 * frame), frame, 0);
    jb.push(s.make(3, 2 * frame), frame, 1);  // 3 is held behind the gap at 2
    CHECK(jb.stats().duplicates == 1);
    CHECK(seqs(jb.pop(1)) == std::vector<uint16_t>{1});
    jb.push(s.make(1, 0), frame, 2);  // 1 was released: too late to matter
    CHECK(jb.stats().late == 1);
    CHECK(seqs(jb.flush()) == std::vector<uint16_t>{3});
  }

  TEST_CASE("a timestamp gap without a missing packet (DTX) becomes silence, a long jump does not") {
    jitter_buffer jb(cfg());
    sender s;
    jb.push(s.make(1, 0), frame, 0);
    jb.push(s.make(2, frame + 800), frame, 100);  // 100 ms pause in the sender
    auto items = jb.pop(100);
    REQUIRE(items.size() == 3);
    CHECK(items[1].what == playout_item::kind::silence);
    CHECK(items[1].duration == 800);
    jb.push(s.make(3, 2 * frame + 800 + 8000 * 5), frame, 200);  // 5 s jump: past max_fill_ms
    items = jb.pop(200);
    REQUIRE(items.size() == 1);
    CHECK(items[0].what == playout_item::kind::packet);
  }

  TEST_CASE("a new SSRC releases what is held and starts over at its own sequence numbers") {
    jitter_buffer jb(cfg());
    sender a, b;
    b.ssrc = 0x9999;
    jb.push(a.make(100, 0), frame, 0);
    (void)jb.pop(0);
    jb.push(a.make(102, 2 * frame), frame, 10);  // held behind 101
    jb.push(b.make(7, 5000), frame, 20);         // the sender restarted
    auto items = jb.pop(20);
    CHECK(seqs(items) == std::vector<uint16_t>{102, 7});
    CHECK(jb.stats().resyncs == 1);
    jb.push(b.make(8, 5000 + frame), frame, 40);
    CHECK(seqs(jb.pop(40)) == std::vector<uint16_t>{8});
  }

  TEST_CASE("a sequence jump beyond the dropout limit is a restart, not 4000 lost packets") {
    jitter_buffer jb(cfg());
    sender s;
    jb.push(s.make(10, 0), frame, 0);
    (void)jb.pop(0);
    jb.push(s.make(5000, 900000), frame, 20);
    CHECK(seqs(jb.pop(20)) == std::vector<uint16_t>{5000});
    CHECK(jb.stats().lost == 0);
    CHECK(jb.stats().resyncs == 1);
  }

  TEST_CASE("zero-duration packets (RFC 4733 events) keep their place and add no audio time") {
    jitter_buffer jb(cfg());
    sender s;
    jb.push(s.make(1, 0), frame, 0);
    jb.push(s.make(2, frame), 0, 0);  // an event at the next timestamp
    jb.push(s.make(3, frame), 0, 0);
    jb.push(s.make(4, 3 * frame), frame, 0);  // audio resumes after the 40 ms event
    auto items = jb.pop(0);
    REQUIRE(items.size() == 5);
    CHECK(items[3].what == playout_item::kind::silence);
    CHECK(items[3].duration == 2 * frame);
  }

  TEST_CASE("at most max_packets are held: a flood behind a gap gives the gap up at once") {
    auto c = cfg(10000);
    c.max_packets = 4;
    jitter_buffer jb(c);
    sender s;
    jb.push(s.make(0, 0), frame, 0);
    (void)jb.pop(0);
    for (uint16_t i = 2; i < 8; ++i) jb.push(s.make(i, i * frame), frame, 0);
    auto items = jb.pop(0);
    CHECK(seqs(items) == std::vector<uint16_t>{2, 3, 4, 5, 6, 7});
    CHECK(jb.stats().lost == 1);
  }
}
