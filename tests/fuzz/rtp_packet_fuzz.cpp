// libFuzzer target: net/sip/rtp_packet.hpp and the jitter buffer, what every datagram reaching an
// RTP port goes through. The input is cut into datagrams (a length byte before each), each parsed
// and, when RTP, pushed into a jitter buffer with arrival times that advance 20 ms per datagram.
// Beyond "no crash": a payload view lies inside its datagram; the buffer never holds more than
// it was given; every released packet was pushed; a flush leaves it empty; concealment and
// silence items are never longer than max_fill_ms. Each datagram also goes through the RTCP
// parser (net/sip/rtcp_packet.hpp; RTCP shares the RTP port under rtcp-mux): report blocks it
// reads, written back as a receiver report, read back the same.

#include <cstddef>
#include <cstdint>
#include <span>

#include "net/sip/jitter_buffer.hpp"
#include "net/sip/rtcp_packet.hpp"
#include "net/sip/rtp_packet.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;
using namespace sluice::net::sip;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  jitter_buffer_config cfg;
  cfg.max_packets = 16;
  jitter_buffer jb(cfg);
  const uint32_t max_fill = static_cast<uint32_t>(cfg.max_fill_ms) * cfg.clock_rate / 1000;
  std::size_t off = 0;
  int64_t now = 0;
  uint64_t pushed = 0, released = 0;
  auto check = [&](const std::vector<playout_item>& items) {
    for (const auto& it : items) {
      if (it.what == playout_item::kind::packet) ++released;
      else fuzz::require(it.duration > 0 && it.duration <= max_fill, "a fill longer than max_fill_ms");
    }
  };
  while (off < size) {
    const std::size_t n = std::min<std::size_t>(data[off], size - off - 1);
    const std::span<const uint8_t> d(data + off + 1, n);
    off += 1 + n;
    if (auto c = parse_rtcp(d)) {
      const std::size_t keep = std::min<std::size_t>(c->blocks.size(), 31);
      const std::span<const rtcp_report_block> blocks(c->blocks.data(), keep);
      auto back = parse_rtcp(render_receiver_report(c->reporter_ssrc, blocks, c->cname, !c->bye.empty()));
      fuzz::require(back.has_value(), "a rendered receiver report does not parse");
      fuzz::require(back->blocks.size() == keep, "a receiver report lost blocks");
      for (std::size_t i = 0; i < keep; ++i)
        fuzz::require(back->blocks[i].ssrc == blocks[i].ssrc && back->blocks[i].highest_seq == blocks[i].highest_seq &&
                          back->blocks[i].cumulative_lost == blocks[i].cumulative_lost &&
                          back->blocks[i].jitter == blocks[i].jitter && back->blocks[i].dlsr == blocks[i].dlsr,
                      "a report block changed on its way through a receiver report");
    }
    auto p = parse_rtp(d);
    if (!p) continue;
    fuzz::require(p->payload.data() >= d.data() && p->payload.data() + p->payload.size() <= d.data() + d.size(),
                  "an RTP payload outside its datagram");
    (void)parse_telephone_event(p->payload);
    jb.push(*p, static_cast<uint32_t>(p->payload.size()), now);
    ++pushed;
    now += 20;
    check(jb.pop(now));
    fuzz::require(jb.held() <= pushed, "the buffer holds more than it was given");
  }
  check(jb.flush());
  fuzz::require(jb.held() == 0, "a flush left packets held");
  fuzz::require(released <= pushed, "more packets released than pushed");
  return 0;
}
