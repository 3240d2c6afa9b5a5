// RTCP receiver reports during a SIP call. SIPp places the call, but its SDP names the test's own
// sockets, so the test is the media peer: it sends RTP with losses it chose (across a sequence
// and a timestamp wrap), sends an SR, and reads the service's receiver reports where RFC 3550
// says they go (the RTP port + 1, or the RTP port itself with rtcp-mux). Every field is checked
// against what the test computes from what it sent.
#include <sys/socket.h>

#include <future>
#include <set>

#include "net/sip/rtcp_packet.hpp"
#include "tests/net/sip/rtcp_test_packets.hpp"
#include "tests/net/sip/sip_test_util.hpp"

using namespace sluice;
using namespace sluice::test;
using udp = boost::asio::ip::udp;

namespace {
constexpr uint32_t peer_ssrc = 0x1234ABCD;
constexpr uint16_t first_seq = 65500;           // wraps at index 36
constexpr uint32_t first_ts = 0xFFFFF000;       // wraps at index 26
constexpr int packets = 100;
constexpr int samples_per_packet = 160;         // 20 ms of PCMU
constexpr uint32_t odd_offset = 800;            // every odd packet's timestamp is this far ahead
constexpr uint64_t sr_ntp = 0x0123456789ABCDEFull;
constexpr int sr_after_index = 60;
const std::set<int> dropped = {10, 11, 50, 77};
// Arrival-time noise allowed between the test's send times and the service's reads: 25 ms.
constexpr double jitter_tolerance = 200;

uint32_t ext_seq(int index) { return static_cast<uint32_t>(first_seq) + static_cast<uint32_t>(index); }

std::vector<uint8_t> rtp(int index) {
  std::vector<uint8_t> v(12 + samples_per_packet, 0xff);  // PCMU silence
  const auto seq = static_cast<uint16_t>(first_seq + index);
  const uint32_t ts = first_ts + static_cast<uint32_t>(index * samples_per_packet) + (index % 2 ? odd_offset : 0);
  v[0] = 0x80;
  v[1] = 0;
  v[2] = static_cast<uint8_t>(seq >> 8);
  v[3] = static_cast<uint8_t>(seq);
  for (int i = 0; i < 4; ++i) v[4 + i] = static_cast<uint8_t>(ts >> (24 - 8 * i));
  for (int i = 0; i < 4; ++i) v[8 + i] = static_cast<uint8_t>(peer_ssrc >> (24 - 8 * i));
  return v;
}

std::vector<uint8_t> sender_report() {
  return test::sender_report(peer_ssrc, sr_ntp, sr_after_index, sr_after_index * samples_per_packet);
}

struct received_report {
  net::sip::rtcp_compound rtcp;
  std::chrono::steady_clock::time_point at;
};

// Reads what is queued (wait_ms = 0) or waits up to wait_ms for one datagram; RTP (not RTCP)
// datagrams are not expected here and fail the parse.
void read_reports(udp::socket& s, std::vector<received_report>& out, int wait_ms) {
  timeval tv{wait_ms / 1000, (wait_ms % 1000) * 1000};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::vector<uint8_t> buf(2048);
  for (;;) {
    const auto n = ::recv(s.native_handle(), buf.data(), buf.size(), wait_ms > 0 ? 0 : MSG_DONTWAIT);
    if (n <= 0) return;
    auto c = net::sip::parse_rtcp(std::span<const uint8_t>(buf.data(), static_cast<std::size_t>(n)));
    REQUIRE_MESSAGE(c.has_value(), "the service sent something that is not RTCP");
    out.push_back({*c, std::chrono::steady_clock::now()});
    if (wait_ms > 0) return;
  }
}

// RFC 3550 A.8 over the test's own send times: what the jitter would be if each packet were
// read the instant it was sent.
double expected_jitter(const std::vector<std::pair<int, std::chrono::steady_clock::time_point>>& sent) {
  double j = 0;
  bool have = false;
  double last_transit = 0;
  const auto t0 = sent.front().second;
  for (const auto& [index, at] : sent) {
    const double arrival = std::chrono::duration<double>(at - t0).count() * 8000;
    const double ts = static_cast<double>(index) * samples_per_packet + (index % 2 ? odd_offset : 0);
    const double transit = arrival - ts;
    if (have) j += (std::abs(transit - last_transit) - j) / 16;
    last_transit = transit;
    have = true;
  }
  return j;
}

struct media_call {
  bool mux;
  config::sip_config cfg;
  temp_dir tmp;
  std::unique_ptr<sip_served> s;
  boost::asio::io_context ioc;
  udp::socket rtp_sock{ioc}, rtcp_sock{ioc};
  udp::endpoint service_rtp, service_rtcp;

  explicit media_call(bool m) : mux(m) {
    // The pool holds one stream's ports, so the test knows the service's RTP port.
    cfg.rtp_port_min = free_rtp_base(4);
    cfg.rtp_port_max = cfg.rtp_port_min + 1;
    cfg.rtcp_interval_ms = 400;
    s = std::make_unique<sip_served>(cfg);
    const auto lo = boost::asio::ip::make_address("127.0.0.1");
    // The test's pair just above the service's (free_rtp_base found 4 free a moment ago).
    rtp_sock.open(udp::v4());
    rtp_sock.bind({lo, static_cast<uint16_t>(cfg.rtp_port_min + 2)});
    rtcp_sock.open(udp::v4());
    rtcp_sock.bind({lo, static_cast<uint16_t>(cfg.rtp_port_min + 3)});
    service_rtp = {lo, static_cast<uint16_t>(cfg.rtp_port_min)};
    service_rtcp = {lo, static_cast<uint16_t>(mux ? cfg.rtp_port_min : cfg.rtp_port_min + 1)};
  }
  udp::socket& report_sock() { return mux ? rtp_sock : rtcp_sock; }
};
}  // namespace

TEST_SUITE("sip rtcp") {
  TEST_CASE("receiver reports on RTP port + 1 during a call with known loss: every field as the test computes it") {
    media_call m(false);
    auto sipp = std::async(std::launch::async, [&] {
      return run_sipp(*m.s, m.tmp, "uac_media_peer.xml",
                      {{"@RTP_PORT@", std::to_string(m.cfg.rtp_port_min + 2)}, {"@PT@", "0"}, {"@RTPMAP@", "PCMU/8000"}, {"@SDP_EXTRA@", ""},
                       {"@ANSWER_HAS@", "a=recvonly"}, {"@PAUSE_MS@", "6000"}},
                      "-m 1");
    });
    if (!m.s->wait_for([&] { return m.s->sip_calls().size() == 1; })) FAIL("no call: " << sipp.get().output);
    std::vector<received_report> reports;
    std::vector<std::pair<int, std::chrono::steady_clock::time_point>> sent;
    // The first packet, then the first report: proof that the receiver has started reading, so
    // the paced packets after it are read as they arrive (their jitter is the stream's).
    m.rtp_sock.send_to(boost::asio::buffer(rtp(0)), m.service_rtp);
    sent.emplace_back(0, std::chrono::steady_clock::now());
    for (int tries = 0; tries < 20 && reports.empty(); ++tries) read_reports(m.rtcp_sock, reports, 500);
    REQUIRE_FALSE(reports.empty());
    std::chrono::steady_clock::time_point sr_sent{};
    for (int i = 1; i < packets; ++i) {
      // Pacing of the traffic, not synchronisation: packets of a live stream come every 20 ms.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (i == sr_after_index) {
        sr_sent = std::chrono::steady_clock::now();
        m.rtcp_sock.send_to(boost::asio::buffer(sender_report()), m.service_rtcp);
      }
      if (!dropped.count(i)) {
        m.rtp_sock.send_to(boost::asio::buffer(rtp(i)), m.service_rtp);
        sent.emplace_back(i, std::chrono::steady_clock::now());
      }
      read_reports(m.rtcp_sock, reports, 0);
    }
    // Until the report with the BYE (sent when SIPp hangs up).
    for (int tries = 0; tries < 40 && (reports.empty() || reports.back().rtcp.bye.empty()); ++tries)
      read_reports(m.rtcp_sock, reports, 500);
    const auto r = sipp.get();
    INFO(r.output);
    CHECK(r.status == 0);
    REQUIRE_FALSE(reports.empty());
    REQUIRE_FALSE(reports.back().rtcp.bye.empty());
    MESSAGE(reports.size() << " receiver reports");
    CHECK(reports.size() >= 3);  // 2 s of packets at a 400 ms (200-600 ms) interval, and the last

    uint32_t prev_highest = ext_seq(0) - 1;
    for (const auto& rep : reports) {
      const auto& c = rep.rtcp;
      CHECK_FALSE(c.sender.has_value());  // a receiver report, not an SR
      CHECK(c.reporter_ssrc == reports.front().rtcp.reporter_ssrc);  // one SSRC of ours throughout
      REQUIRE(c.blocks.size() == 1);
      const auto& b = c.blocks[0];
      CHECK(b.ssrc == peer_ssrc);
      // Sent in order on loopback: everything up to the highest seq arrived, but the dropped.
      const int highest_index = static_cast<int>(b.highest_seq - ext_seq(0));
      REQUIRE(highest_index >= 0);
      REQUIRE(highest_index < packets);
      CHECK_FALSE(dropped.count(highest_index));
      int lost = 0, lost_interval = 0;
      for (int d : dropped) {
        lost += d <= highest_index;
        lost_interval += ext_seq(d) > prev_highest && ext_seq(d) <= b.highest_seq;
      }
      CHECK(b.cumulative_lost == lost);
      const uint32_t expected_interval = b.highest_seq - prev_highest;
      CHECK(b.fraction_lost == (expected_interval == 0 ? 0 : lost_interval * 256 / expected_interval));
      prev_highest = b.highest_seq;
      // LSR/DLSR: none before the SR was sent; after it, the SR's middle 32 bits and a delay no
      // longer than the time between sending it and reading this report.
      if (sr_sent == std::chrono::steady_clock::time_point{} || rep.at < sr_sent) {
        CHECK(b.lsr == 0);
        CHECK(b.dlsr == 0);
      } else if (b.lsr != 0) {
        CHECK(b.lsr == net::sip::ntp_middle32(sr_ntp));
        const double since = std::chrono::duration<double>(rep.at - sr_sent).count();
        CHECK(b.dlsr <= since * 65536 + 1);
      }
    }
    const auto& last = reports.back().rtcp.blocks[0];
    CHECK(last.highest_seq == ext_seq(packets - 1));
    CHECK(last.cumulative_lost == static_cast<int>(dropped.size()));
    CHECK(last.lsr == net::sip::ntp_middle32(sr_ntp));  // the SR did arrive before the end
    const double j = expected_jitter(sent);
    MESSAGE("jitter: reported " << last.jitter << ", from the send times " << j);
    CHECK(std::abs(static_cast<double>(last.jitter) - j) <= jitter_tolerance);
    // The call's record counts the SR received and the reports sent.
    const auto rec = m.s->ended_call().start.metadata["rtp"][0];
    MESSAGE("rtp: " << rec.dump());
    CHECK(rec["rtcp_received"].get<int>() == 1);
    CHECK(rec["rtcp_sent"].get<std::size_t>() >= reports.size());
  }

  TEST_CASE("rtcp-mux offered: the answer says a=rtcp-mux and the reports come to the RTP port") {
    media_call m(true);
    auto sipp = std::async(std::launch::async, [&] {
      return run_sipp(*m.s, m.tmp, "uac_media_peer.xml",
                      {{"@RTP_PORT@", std::to_string(m.cfg.rtp_port_min + 2)}, {"@PT@", "0"}, {"@RTPMAP@", "PCMU/8000"}, {"@SDP_EXTRA@", "\n      a=rtcp-mux"},
                       {"@ANSWER_HAS@", "a=rtcp-mux"}, {"@PAUSE_MS@", "3000"}},
                      "-m 1");
    });
    if (!m.s->wait_for([&] { return m.s->sip_calls().size() == 1; })) FAIL("no call: " << sipp.get().output);
    std::vector<received_report> reports;
    for (int i = 0; i < 20; ++i)
      if (!dropped.count(i)) m.rtp_sock.send_to(boost::asio::buffer(rtp(i)), m.service_rtp);
    // The SR on the RTP port: with rtcp-mux that is where RTCP goes.
    m.rtp_sock.send_to(boost::asio::buffer(sender_report()), m.service_rtcp);
    for (int tries = 0; tries < 40 && (reports.empty() || reports.back().rtcp.bye.empty()); ++tries)
      read_reports(m.rtp_sock, reports, 500);
    const auto r = sipp.get();
    INFO(r.output);
    CHECK(r.status == 0);  // SIPp checked the answer for a=rtcp-mux
    REQUIRE_FALSE(reports.empty());
    REQUIRE_FALSE(reports.back().rtcp.bye.empty());
    const auto& last = reports.back().rtcp.blocks.at(0);
    CHECK(last.highest_seq == ext_seq(19));
    CHECK(last.cumulative_lost == 2);  // 10 and 11
    CHECK(last.lsr == net::sip::ntp_middle32(sr_ntp));
    // Nothing arrived on RTP + 1.
    std::vector<received_report> none;
    read_reports(m.rtcp_sock, none, 0);
    CHECK(none.empty());
  }
}
