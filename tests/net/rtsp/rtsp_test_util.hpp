#pragma once
// A served engine with the RTSP service on a free loopback port, real peers (ffmpeg, GStreamer)
// run as child processes that are killed on every exit path, and the true transcript of the
// committed recording the peers send.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "config/sluice_config.hpp"
#include "moe/acoustic_model.hpp"
#include "net/auth/failure_limiter.hpp"
#include "net/auth/key_store.hpp"
#include "net/calls/call_registry.hpp"
#include "net/rtsp/rtsp_service.hpp"
#include "tests/common/audio_tools.hpp"
#include "tests/common/free_ports.hpp"
#include "tests/common/poll_until.hpp"
#include "tests/common/phone_recording.hpp"
#include "tests/common/word_errors.hpp"

namespace sluice::test {

namespace asio = boost::asio;


inline std::shared_ptr<const moe::acoustic_model> rtsp_model() {
  static auto m = *moe::load_model(SLUICE_SOURCE_DIR "/models/default");
  return m;
}

/// Whether `tool` runs here (a peer missing at test time is a visible skip, not a pass).
inline bool have_tool(const std::string& check) { return std::system((check + " >/dev/null 2>&1").c_str()) == 0; }

/// A TCP port free on 127.0.0.1 a moment ago.
inline uint16_t free_tcp_port() {
  asio::io_context ioc;
  asio::ip::tcp::acceptor a(ioc, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

struct rtsp_served {
  std::unique_ptr<actors::engine> engine;
  std::shared_ptr<net::calls::call_registry> calls = std::make_shared<net::calls::call_registry>();
  std::unique_ptr<net::rtsp::rtsp_service> rtsp;
  config::rtsp_config cfg;

  using key_check = std::function<std::optional<net::auth::principal>(std::string_view)>;

  explicit rtsp_served(config::rtsp_config c = {}, key_check authenticate = {},
                       std::shared_ptr<net::auth::failure_limiter> failures = {},
                       std::shared_ptr<net::auth::key_streams> key_streams = {})
      : cfg(std::move(c)) {
    config::sluice_config all;
    all.model.dir = SLUICE_SOURCE_DIR "/models/default";
    all.engine.report_ms = 50;
    all.engine.scheduler_threads = 2;
    auto res = actors::engine_resources::create(all, rtsp_model());
    REQUIRE(res.has_value());
    engine = actors::engine::start(*res);
    if (cfg.port == config::rtsp_config{}.port) cfg.port = 0;
    if (cfg.rtp_port_min == config::rtsp_config{}.rtp_port_min) {
      cfg.rtp_port_min = free_rtp_base(32);
      cfg.rtp_port_max = cfg.rtp_port_min + 31;
    }
    auto s = net::rtsp::rtsp_service::start(*engine, calls, cfg, std::move(authenticate), std::move(failures),
                                            std::move(key_streams));
    REQUIRE_MESSAGE(s.has_value(), (s ? std::string() : s.error().message));
    rtsp = std::move(*s);
  }
  ~rtsp_served() {
    rtsp.reset();
    engine.reset();
  }
  std::string url(const std::string& name) const {
    return "rtsp://127.0.0.1:" + std::to_string(rtsp->port()) + "/" + name;
  }
  std::vector<net::calls::call_record> of(const std::string& source) const {
    std::vector<net::calls::call_record> out;
    for (auto& c : calls->list())
      if (c.start.source == source) out.push_back(std::move(c));
    return out;
  }
  /// Waits (bounded) for `n` calls of `source`, all ended.
  bool wait_ended(const std::string& source, std::size_t n, std::chrono::seconds limit = std::chrono::seconds(60)) const {
    return poll_until(
        [&] {
          auto c = of(source);
          return c.size() == n && std::none_of(c.begin(), c.end(), [](const auto& x) { return x.live; });
        },
        limit);
  }
};

// A key store with one key of each kind, and the check the service is given (as `sluice serve`
// gives it the server's gate).
struct rtsp_keys {
  net::auth::new_key streamer, reader;
  std::shared_ptr<net::auth::key_store> store;
  rtsp_keys() {
    auto s = net::auth::make_key("acme", *net::auth::scope_set::parse("stream"));
    auto r = net::auth::make_key("acme", *net::auth::scope_set::parse("read"));
    REQUIRE(s.has_value());
    REQUIRE(r.has_value());
    streamer = *s;
    reader = *r;
    auto parsed = net::auth::key_store::parse(net::auth::format_record(streamer.record) + "\n" +
                                                  net::auth::format_record(reader.record) + "\n",
                                              "test keys");
    REQUIRE(parsed.has_value());
    store = std::make_shared<net::auth::key_store>(std::move(*parsed));
  }
  rtsp_served::key_check check() const {
    return [st = store](std::string_view key) { return st->authenticate(key); };
  }
};

/// The finals of one channel of a call, joined.
inline std::string finals_text(const net::calls::call_record& c, std::size_t channel = 0) {
  std::string t;
  if (channel >= c.channels.size()) return t;
  for (const auto& f : c.channels[channel].finals) t += (t.empty() ? "" : " ") + f.text;
  return t;
}

/// A child process (argv, no shell) killed with SIGKILL and reaped when this goes out of scope,
/// whatever way the test leaves. Its output goes to `log`.
class child_process {
 public:
  child_process(const std::vector<std::string>& argv, const std::string& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(log.c_str(), "a", stderr);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
  }
  ~child_process() { kill(); }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  /// SIGKILL to the child's process group, then reaped. Idempotent.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  /// Waits at most `limit` for the child to exit; its exit status, or -1 (still running: killed).
  int wait(std::chrono::milliseconds limit) {
    int status = -1;
    const bool exited = poll_until(
        [&] {
          int st = 0;
          const auto r = ::waitpid(pid_, &st, WNOHANG);
          if (r == pid_) {
            status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
            pid_ = -1;
            return true;
          }
          return false;
        },
        limit);
    if (!exited) kill();
    return status;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace sluice::test
