#include "net/calls/webhook.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include "net/calls/call_json.hpp"

namespace sluice::net::calls {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr int max_port = 65535;
// The answer's body is read (to finish the exchange) but not kept past this size.
constexpr std::uint64_t max_answer_bytes = 64 * 1024;
constexpr int status_class = 100;
constexpr int status_ok_class = 2;

}  // namespace

result<http_url> parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return fail(errc::invalid_config, "webhook url must start with http://: " + url);
  const std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  http_url u;
  if (slash != std::string::npos) u.target = rest.substr(slash);
  const auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    u.host = authority.substr(0, colon);
    u.port = authority.substr(colon + 1);
    const bool digits = !u.port.empty() && u.port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || u.port.size() > 5 || std::stoi(u.port) < 1 || std::stoi(u.port) > max_port)
      return fail(errc::invalid_config, "webhook url has a bad port: " + url);
  } else {
    u.host = authority;
  }
  if (u.host.empty()) return fail(errc::invalid_config, "webhook url has no host: " + url);
  return u;
}

result<std::unique_ptr<webhook>> webhook::start(call_registry& reg, options opt) {
  auto url = parse_http_url(opt.url);
  if (!url) return tl::unexpected(url.error());
  std::unique_ptr<webhook> w(new webhook());
  w->opt_ = std::move(opt);
  w->url_ = std::move(*url);
  subscription_filter f;
  f.kinds = static_cast<uint8_t>(update_kind::call_end);
  w->sub_ = reg.subscribe(f, w->opt_.max_queued, overflow::drop_update, [sig = w->sig_] {
    {
      std::lock_guard lock(sig->mu);
      sig->woken = true;
    }
    sig->cv.notify_one();
  });
  w->thread_ = std::thread([p = w.get()] { p->run(); });
  return w;
}

void webhook::run() {
  for (;;) {
    {
      std::unique_lock lock(sig_->mu);
      sig_->cv.wait(lock, [&] { return sig_->woken || sig_->stopping; });
      if (sig_->stopping) return;
      sig_->woken = false;
    }
    // One call at a time: the others wait in the bounded queue, where a full queue is counted.
    for (auto one = sub_->take(1); !one.empty(); one = sub_->take(1)) {
      const auto& u = one.front();
      if (!u.call) continue;
      const std::string body = dump(call_json(*u.call));
      std::string why;
      int made = 0;
      auto wait = opt_.backoff;
      for (int i = 0; i <= opt_.retries; ++i) {
        if (i > 0) {
          std::unique_lock lock(sig_->mu);
          if (sig_->cv.wait_for(lock, wait, [&] { return sig_->stopping; })) return;
          wait *= 2;
        }
        ++made;
        ++attempts_;
        why = attempt(u.id, body);
        if (why.empty()) break;
        spdlog::debug("webhook: call {}: attempt {} failed: {}", u.id, made, why);
        std::lock_guard lock(sig_->mu);
        if (sig_->stopping) return;
      }
      if (why.empty()) {
        ++delivered_;
        spdlog::debug("webhook: call {} delivered after {} attempt(s)", u.id, made);
      } else {
        ++given_up_;
        spdlog::warn("webhook: call {} not delivered to {}:{} after {} attempt(s): {}", u.id, url_.host, url_.port, made,
                     why);
      }
      if (opt_.on_done) opt_.on_done(u.id, why.empty(), made, why);
    }
  }
}

std::string webhook::attempt(const std::string& id, const std::string& body) {
  asio::io_context ioc;
  {
    std::lock_guard lock(sig_->mu);
    if (sig_->stopping) return "stopped";
    sig_->current = &ioc;
  }
  tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  asio::steady_timer deadline(ioc);
  http::request<http::string_body> req{http::verb::post, url_.target, 11};
  req.set(http::field::host, url_.host);
  req.set(http::field::user_agent, "sluice");
  req.set(http::field::content_type, "application/json");
  req.set("X-Sluice-Call", id);
  req.body() = body;
  req.prepare_payload();
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_answer_bytes);
  const std::string timed_out_why = "no answer within " + std::to_string(opt_.timeout.count()) + " ms";
  std::string why = timed_out_why;
  bool finished = false, timed_out = false;
  // One deadline for the whole attempt (the resolver has no timeout of its own).
  deadline.expires_after(opt_.timeout);
  deadline.async_wait([&](beast::error_code ec) {
    if (ec || finished) return;
    timed_out = true;
    resolver.cancel();
    beast::error_code ignored;
    stream.socket().close(ignored);
  });
  auto done = [&](std::string w) {
    if (finished) return;
    finished = true;
    why = timed_out ? timed_out_why : std::move(w);
    deadline.cancel();
  };
  resolver.async_resolve(url_.host, url_.port, [&](beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return done("resolve: " + ec.message());
    stream.async_connect(results, [&](beast::error_code ec2, const tcp::endpoint&) {
      if (ec2) return done("connect: " + ec2.message());
      http::async_write(stream, req, [&](beast::error_code ec3, std::size_t) {
        if (ec3) return done("send: " + ec3.message());
        http::async_read(stream, buf, parser, [&](beast::error_code ec4, std::size_t) {
          if (ec4) return done("answer: " + ec4.message());
          const int status = static_cast<int>(parser.get().result_int());
          done(status / status_class == status_ok_class ? "" : "answered " + std::to_string(status));
        });
      });
    });
  });
  ioc.run();
  {
    std::lock_guard lock(sig_->mu);
    sig_->current = nullptr;
  }
  // Stopped (stop()) before any handler finished.
  if (!finished) return "stopped";
  return why;
}

void webhook::stop() {
  {
    std::lock_guard lock(sig_->mu);
    sig_->stopping = true;
    if (sig_->current) sig_->current->stop();
  }
  sig_->cv.notify_all();
  if (thread_.joinable()) thread_.join();
  if (sub_) sub_->cancel();
}

webhook::counts webhook::stats() const {
  counts c;
  c.delivered = delivered_;
  c.given_up = given_up_;
  c.attempts = attempts_;
  c.dropped = sub_ ? sub_->lost() : 0;
  return c;
}

webhook::~webhook() { stop(); }

}  // namespace sluice::net::calls
