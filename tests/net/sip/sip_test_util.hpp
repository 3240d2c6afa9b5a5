#pragma once
// A served engine with the SIP service on free loopback ports, SIPp runs, and a raw SIP-over-UDP
// client for hostile requests. Shared by the SIP test files.
#include <doctest/doctest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "config/sluice_config.hpp"
#include "moe/acoustic_model.hpp"
#include "net/calls/call_registry.hpp"
#include "net/sip/sip_service.hpp"
#include "tests/common/audio_tools.hpp"
#include "tests/common/free_ports.hpp"
#include "tests/common/poll_until.hpp"
#include "tests/common/word_errors.hpp"

namespace sluice::test {

namespace asio = boost::asio;

inline std::shared_ptr<const moe::acoustic_model> sip_model() {
  static auto m = *moe::load_model(SLUICE_SOURCE_DIR "/models/default");
  return m;
}

/// A port free for both UDP and TCP on 127.0.0.1 now (SIP listens on both with one number).
inline uint16_t free_sip_port() {
  asio::io_context ioc;
  const auto lo = asio::ip::make_address("127.0.0.1");
  for (int tries = 0; tries < 50; ++tries) {
    asio::ip::udp::socket u(ioc, asio::ip::udp::endpoint(lo, 0));
    const auto port = u.local_endpoint().port();
    boost::system::error_code ec;
    asio::ip::tcp::acceptor t(ioc);
    t.open(asio::ip::tcp::v4(), ec);
    if (!ec) t.bind(asio::ip::tcp::endpoint(lo, port), ec);
    if (!ec) return port;
  }
  FAIL("no free port");
  return 0;
}

struct sip_served {
  std::unique_ptr<actors::engine> engine;
  std::shared_ptr<net::calls::call_registry> calls = std::make_shared<net::calls::call_registry>();
  std::unique_ptr<net::sip::sip_service> sip;
  config::sip_config cfg;

  /// `tenants_dir`: postproc.tenants_dir (tenants' hotwords and redaction rules), none when empty.
  explicit sip_served(config::sip_config c = {}, const std::string& tenants_dir = {}) : cfg(std::move(c)) {
    config::sluice_config all;
    all.model.dir = SLUICE_SOURCE_DIR "/models/default";
    all.postproc.tenants_dir = tenants_dir;
    all.engine.report_ms = 50;
    all.engine.scheduler_threads = 2;
    auto res = actors::engine_resources::create(all, sip_model());
    REQUIRE(res.has_value());
    engine = actors::engine::start(*res);
    cfg.port = free_sip_port();
    if (cfg.rtp_port_min == config::sip_config{}.rtp_port_min) {
      cfg.rtp_port_min = free_rtp_base(64);
      cfg.rtp_port_max = cfg.rtp_port_min + 63;
    }
    auto s = net::sip::sip_service::start(*engine, calls, cfg);
    REQUIRE_MESSAGE(s.has_value(), (s ? std::string() : s.error().message));
    sip = std::move(*s);
  }
  ~sip_served() {
    sip.reset();
    engine.reset();
  }

  /// Waits (bounded) until `done()` holds; what the service publishes comes from its threads.
  bool wait_for(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(30)) const {
    return test::poll_until(done, limit);
  }

  std::vector<net::calls::call_record> sip_calls() const {
    std::vector<net::calls::call_record> out;
    for (auto& c : calls->list())
      if (c.start.source == "sip") out.push_back(std::move(c));
    return out;
  }

  /// The test's one SIP call, once it has ended (waited for, bounded); the test stops when
  /// there is none, more than one, or it does not end.
  net::calls::call_record ended_call() const {
    REQUIRE(wait_for([&] {
      auto c = sip_calls();
      return c.size() == 1 && !c[0].live;
    }));
    return sip_calls()[0];
  }
};

struct sipp_run {
  int status = -1;
  std::string output;
};

/// Runs SIPp against the service with scenario template `scenario` (tests/net/sip/), its
/// @KEY@ placeholders replaced, and extra arguments; at most 60 s.
inline sipp_run run_sipp(const sip_served& s, const temp_dir& tmp, const std::string& scenario,
                         const std::vector<std::pair<std::string, std::string>>& subst, const std::string& args) {
  std::ifstream in(SLUICE_SOURCE_DIR "/tests/net/sip/" + scenario);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string xml = ss.str();
  REQUIRE_FALSE(xml.empty());
  for (const auto& [k, v] : subst)
    for (auto p = xml.find(k); p != std::string::npos; p = xml.find(k)) xml.replace(p, k.size(), v);
  const auto path = tmp.file(scenario);
  std::ofstream(path) << xml;
  const auto out = tmp.file(scenario + ".out");
  const std::string cmd = "timeout 60 sipp 127.0.0.1:" + std::to_string(s.cfg.port) + " -sf " + path +
                          " -i 127.0.0.1 -mi 127.0.0.1 -p " + std::to_string(free_sip_port()) + " -mp " +
                          std::to_string(free_rtp_base(4)) + " -nostdin -timeout 55s -timeout_error -s sluice " + args +
                          " > " + out + " 2>&1";
  sipp_run r;
  const int st = std::system(cmd.c_str());
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream o(out);
  std::stringstream os;
  os << o.rdbuf();
  r.output = os.str();
  return r;
}

/// The finals of one channel of a call, joined.
inline std::string finals_text(const net::calls::call_record& c, std::size_t channel = 0) {
  std::string t;
  if (channel >= c.channels.size()) return t;
  for (const auto& f : c.channels[channel].finals) t += (t.empty() ? "" : " ") + f.text;
  return t;
}

/// One SIP request over UDP and the final response's status line (100 Trying skipped); "" when
/// nothing final comes within `limit`.
inline std::string sip_udp_request(uint16_t port, const std::string& request,
                                   std::chrono::milliseconds limit = std::chrono::milliseconds(3000),
                                   std::string* whole = nullptr) {
  asio::io_context ioc;
  asio::ip::udp::socket sock(ioc, asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  timeval tv{static_cast<time_t>(limit.count() / 1000), static_cast<suseconds_t>((limit.count() % 1000) * 1000)};
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = request;
  const auto lp = std::to_string(sock.local_endpoint().port());
  for (auto p = req.find("@LPORT@"); p != std::string::npos; p = req.find("@LPORT@")) req.replace(p, 7, lp);
  sock.send_to(asio::buffer(req), asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<char> buf(65536);
    // Plain recv: asio's blocking receive polls without the socket's timeout.
    const auto n = ::recv(sock.native_handle(), buf.data(), buf.size(), 0);
    if (n < 0) break;
    std::string msg(buf.data(), static_cast<std::size_t>(n));
    const auto line = msg.substr(0, msg.find("\r\n"));
    if (line.rfind("SIP/2.0 1", 0) == 0) continue;  // provisional
    if (whole) *whole = msg;
    return line;
  }
  return {};
}

}  // namespace sluice::test
