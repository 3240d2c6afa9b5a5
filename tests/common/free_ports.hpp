#pragma once
// Loopback ports for tests that run peers (SIPp, baresip, ffmpeg, GStreamer) beside a served
// engine, with other test processes running at the same time (ctest -j).
#include <doctest/doctest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <fstream>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

namespace sluice::test {

/// An even base of `n` consecutive ports, each free for UDP and TCP now, for RTP (a pool or a
/// peer's media ports). Taken outside the kernel's ephemeral range (ip_local_port_range: below
/// it, or above it when too little is below), so that no socket bound to port 0 (a SIP listener,
/// a client) can later be given one of them, and never overlapping a range this process handed
/// out before (a test's pool and its peer's ports).
inline int free_rtp_base(int n) {
  static std::mutex m;
  static std::vector<std::pair<int, int>> given;
  static std::mt19937 rng{std::random_device{}()};
  int eph_low = 32768, eph_high = 60999;
  {
    std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
    int lo = 0, hi = 0;
    if (in >> lo >> hi && lo <= hi) eph_low = lo, eph_high = hi;
  }
  int low = 10000, high = eph_low - n - 2;
  if (high - low < 2000) low = eph_high + 2, high = 65535 - n - 1;
  if (high - low < 2000) FAIL("no room outside the ephemeral ports " << eph_low << "-" << eph_high);
  std::lock_guard lk(m);
  boost::asio::io_context ioc;
  const auto lo = boost::asio::ip::make_address("127.0.0.1");
  for (int tries = 0; tries < 200; ++tries) {
    const int base = std::uniform_int_distribution<int>(low, high)(rng) & ~1;
    bool clash = false;
    for (const auto& [b, e] : given) clash = clash || (base < e && b < base + n);
    for (int p = base; p < base + n && !clash; ++p) {
      boost::system::error_code ec;
      boost::asio::ip::udp::socket u(ioc);
      u.open(boost::asio::ip::udp::v4(), ec);
      if (!ec) u.bind(boost::asio::ip::udp::endpoint(lo, static_cast<uint16_t>(p)), ec);
      boost::asio::ip::tcp::acceptor t(ioc);
      if (!ec) t.open(boost::asio::ip::tcp::v4(), ec);
      if (!ec) t.bind(boost::asio::ip::tcp::endpoint(lo, static_cast<uint16_t>(p)), ec);
      clash = static_cast<bool>(ec);
    }
    if (clash) continue;
    given.emplace_back(base, base + n);
    return base;
  }
  FAIL("no free range of " << n << " ports");
  return 0;
}

}  // namespace sluice::test
