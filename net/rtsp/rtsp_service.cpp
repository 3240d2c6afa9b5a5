#include "net/rtsp/rtsp_service.hpp"

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

#include "net/rtsp/rtsp_context.hpp"
#include "net/rtsp/rtsp_auth.hpp"
#include "net/rtsp/rtsp_pull.hpp"
#include "net/rtsp/rtsp_session.hpp"

namespace sluice::net::rtsp {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr auto stop_grace = std::chrono::seconds(3);
constexpr auto stop_poll = std::chrono::milliseconds(10);
// Open connections per push session allowed (a client may probe with OPTIONS on another one).
constexpr int connections_per_session = 2;

std::vector<std::string> split_urls(const std::string& list) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    auto comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    auto u = list.substr(pos, comma - pos);
    while (!u.empty() && u.front() == ' ') u.erase(u.begin());
    while (!u.empty() && u.back() == ' ') u.pop_back();
    if (!u.empty()) out.push_back(u);
    pos = comma + 1;
  }
  return out;
}
}  // namespace

struct rtsp_service::impl {
  std::shared_ptr<rtsp_context> ctx = std::make_shared<rtsp_context>();
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  std::thread io_thread;
  std::mutex mu;
  std::vector<std::weak_ptr<rtsp_session>> sessions;
  std::vector<std::shared_ptr<rtsp_pull>> pulls;
  uint16_t port = 0;
  bool stopped = false;

  void do_accept() {
    acceptor->async_accept(asio::make_strand(ioc), [this](boost::system::error_code ec, tcp::socket s) {
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
        spdlog::warn("rtsp: accept failed: {}", ec.message());
        return do_accept();
      }
      if (ctx->connections >= ctx->cfg.max_sessions * connections_per_session) {
        spdlog::info("rtsp: connection refused, {} open (rtsp.max_sessions)", ctx->connections.load());
        boost::system::error_code ignored;
        s.close(ignored);
        return do_accept();
      }
      ++ctx->connections;
      auto session = std::make_shared<rtsp_session>(std::move(s), ctx);
      {
        std::lock_guard lock(mu);
        std::erase_if(sessions, [](const auto& w) { return w.expired(); });
        sessions.push_back(session);
      }
      session->start();
      do_accept();
    });
  }
};

result<std::unique_ptr<rtsp_service>> rtsp_service::start(
    actors::engine& engine, std::shared_ptr<calls::call_registry> calls, const config::rtsp_config& cfg,
    std::function<std::optional<auth::principal>(std::string_view key)> authenticate,
    std::shared_ptr<auth::failure_limiter> failures, std::shared_ptr<auth::key_streams> key_streams) {
  boost::system::error_code ec;
  const auto host = asio::ip::make_address(cfg.host, ec);
  if (ec) return fail(errc::invalid_config, "rtsp.host = \"" + cfg.host + "\" is not an IP address");
  if (cfg.enabled && !host.is_loopback() && !authenticate && !cfg.allow_public)
    return fail(errc::invalid_config, "rtsp.host = \"" + cfg.host +
                                          "\" is not a loopback address and pushes need no API key without [auth] keys: "
                                          "configure auth.keys_file, or set rtsp.allow_public = true to take pushes "
                                          "from anyone");
  const auto urls = split_urls(cfg.pull);
  for (const auto& u : urls)
    if (u.rfind("rtsp://", 0) != 0)
      return fail(errc::invalid_config, "rtsp.pull: \"" + split_credentials(u).redacted + "\" is not an rtsp:// URL");
  std::unique_ptr<rtsp_service> s(new rtsp_service());
  s->impl_ = std::make_unique<impl>();
  auto& m = *s->impl_;
  m.ctx->cfg = cfg;
  m.ctx->engine = &engine;
  m.ctx->registry = std::move(calls);
  m.ctx->pool = std::make_shared<sip::port_pool>(cfg.rtp_port_min, cfg.rtp_port_max);
  m.ctx->ioc = &m.ioc;
  m.ctx->authenticate = std::move(authenticate);
  if (m.ctx->authenticate && failures && failures->enabled()) m.ctx->auth_failures = std::move(failures);
  if (m.ctx->authenticate) m.ctx->key_streams = std::move(key_streams);
  if (cfg.enabled) {
    m.acceptor.emplace(m.ioc);
    const tcp::endpoint ep(host, static_cast<uint16_t>(cfg.port));
    m.acceptor->open(ep.protocol(), ec);
    if (!ec) m.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) m.acceptor->bind(ep, ec);
    if (!ec) m.acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return fail(errc::io, "rtsp: cannot listen on " + cfg.host + ":" + std::to_string(cfg.port) + ": " + ec.message());
    m.port = m.acceptor->local_endpoint().port();
    m.do_accept();
  }
  for (const auto& u : urls) {
    auto p = std::make_shared<rtsp_pull>(m.ctx, u);
    p->start();
    m.pulls.push_back(std::move(p));
  }
  m.work.emplace(m.ioc.get_executor());
  m.io_thread = std::thread([&m] {
    for (;;) {
      try {
        m.ioc.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("rtsp: a handler threw: {}; serving on", e.what());
      }
    }
  });
  if (cfg.enabled) spdlog::info("rtsp: listening on {}:{}", cfg.host, m.port);
  return s;
}

uint16_t rtsp_service::port() const { return impl_->port; }
std::vector<std::string> rtsp_service::pull_urls(const std::string& list) { return split_urls(list); }

int rtsp_service::live_sessions() const { return impl_->ctx->sessions; }
int rtsp_service::connections() const { return impl_->ctx->connections; }

std::vector<std::string> rtsp_service::pull_failures() const {
  std::vector<std::string> out;
  for (const auto& p : impl_->pulls) out.push_back(p->last_failure());
  return out;
}

void rtsp_service::stop() {
  if (!impl_) return;
  auto& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    if (m.stopped) return;
    m.stopped = true;
  }
  {
    // No revocation posts to the io_context from here on (it goes when this returns).
    std::lock_guard lock(m.ctx->gate->mu);
    m.ctx->gate->open = false;
  }
  asio::post(m.ioc, [&m] {
    boost::system::error_code ignored;
    if (m.acceptor) m.acceptor->close(ignored);
  });
  std::vector<std::shared_ptr<rtsp_session>> live;
  {
    std::lock_guard lock(m.mu);
    for (auto& w : m.sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->stop("server stopping");
  live.clear();
  for (auto& p : m.pulls) p->stop();
  // Every session and pull closes on its strand; then nothing is left for the io_context.
  m.work.reset();
  const auto deadline = std::chrono::steady_clock::now() + stop_grace;
  while (!m.ioc.stopped() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(stop_poll);
  m.ioc.stop();
  if (m.io_thread.joinable()) m.io_thread.join();
}

rtsp_service::~rtsp_service() { stop(); }

}  // namespace sluice::net::rtsp
