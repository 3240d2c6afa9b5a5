#include "net/calls/webhook.hpp"

#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <cctype>
#include <fstream>
#include <iterator>
#include <optional>

#include "net/calls/call_json.hpp"
#include "net/hex.hpp"

namespace sluice::net::calls {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

constexpr int max_port = 65535;
constexpr std::size_t max_port_digits = 5;
// The answer's body is read (to finish the exchange) but not kept past this size.
constexpr std::uint64_t max_answer_bytes = 64 * 1024;
constexpr int status_class = 100;
constexpr int status_ok_class = 2;

bool is_ip_literal(const std::string& host) {
  beast::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

result<http_url> parse_http_url(const std::string& url) {
  http_url u;
  std::string rest;
  constexpr std::string_view http = "http://", https = "https://";
  if (url.rfind(http, 0) == 0) {
    rest = url.substr(http.size());
  } else if (url.rfind(https, 0) == 0) {
    rest = url.substr(https.size());
    u.tls = true;
    u.port = "443";
  } else {
    return fail(errc::invalid_config, "webhook url must start with http:// or https://: " + url);
  }
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) u.target = rest.substr(slash);
  if (authority.find('@') != std::string::npos)
    return fail(errc::invalid_config, "webhook url must not carry user information (use calls.webhook_secret_file): " + url);
  std::optional<std::string> port;  // as written after the host's ':', when there is one
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) return fail(errc::invalid_config, "webhook url has an unclosed [ in its host: " + url);
    u.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return fail(errc::invalid_config, "webhook url has text after its [host]: " + url);
      port = after.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (port) {
    const bool digits = !port->empty() && port->size() <= max_port_digits &&
                        port->find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(*port) < 1 || std::stoi(*port) > max_port)
      return fail(errc::invalid_config, "webhook url has a bad port: " + url);
    u.port = *port;
  }
  if (u.host.empty()) return fail(errc::invalid_config, "webhook url has no host: " + url);
  return u;
}

std::string webhook_signature(const std::string& secret, int64_t t, const std::string& body) {
  const std::string signed_text = std::to_string(t) + "." + body;
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), md.data(), &n);
  return "t=" + std::to_string(t) + ",v1=" + to_hex(md.data(), n);
}

std::string webhook_prometheus(uint64_t delivered, uint64_t given_up, uint64_t dropped, uint64_t abandoned,
                               uint64_t attempts) {
  std::string o =
      "# HELP sluice_webhook_calls_total Ended calls by what the calls webhook did with them.\n"
      "# TYPE sluice_webhook_calls_total counter\n";
  const std::pair<const char*, uint64_t> rows[] = {
      {"delivered", delivered}, {"given_up", given_up}, {"dropped", dropped}, {"abandoned", abandoned}};
  for (const auto& [outcome, n] : rows)
    o += "sluice_webhook_calls_total{outcome=\"" + std::string(outcome) + "\"} " + std::to_string(n) + "\n";
  o += "# HELP sluice_webhook_attempts_total POSTs the calls webhook attempted (retries included).\n"
       "# TYPE sluice_webhook_attempts_total counter\n"
       "sluice_webhook_attempts_total " + std::to_string(attempts) + "\n";
  return o;
}

result<std::string> read_webhook_secret(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::invalid_config, "calls.webhook_secret_file: cannot read " + path);
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  if (key.empty()) return fail(errc::invalid_config, "calls.webhook_secret_file: " + path + " holds no key");
  return key;
}

result<std::unique_ptr<webhook>> webhook::start(call_registry& reg, options opt) {
  auto url = parse_http_url(opt.url);
  if (!url) return tl::unexpected(url.error());
  if (!opt.ca_file.empty() && !url->tls)
    return fail(errc::invalid_config, "a webhook CA file is set but the webhook url is not https://: " + opt.url);
  if (opt.cert_file.empty() != opt.key_file.empty())
    return fail(errc::invalid_config, "a webhook client certificate needs both its certificate and its key file");
  if (!opt.cert_file.empty() && !url->tls)
    return fail(errc::invalid_config,
                "a webhook client certificate is set but the webhook url is not https://: " + opt.url);
  std::unique_ptr<webhook> w(new webhook());
  if (url->tls) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    ctx->set_verify_mode(ssl::verify_peer);
    beast::error_code ec;
    if (opt.ca_file.empty())
      ctx->set_default_verify_paths(ec);
    else
      ctx->load_verify_file(opt.ca_file, ec);
    if (ec)
      return fail(errc::invalid_config,
                  "webhook: cannot read the trusted CAs" + (opt.ca_file.empty() ? std::string() : " of " + opt.ca_file) +
                      ": " + ec.message());
    if (!opt.cert_file.empty()) {
      ctx->use_certificate_chain_file(opt.cert_file, ec);
      if (ec)
        return fail(errc::invalid_config,
                    "webhook: cannot read the client certificate " + opt.cert_file + ": " + ec.message());
      ctx->use_private_key_file(opt.key_file, ssl::context::pem, ec);
      // OpenSSL refuses a key that does not match the certificate already loaded as it reads it.
      if ((ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) ||
          (!ec && SSL_CTX_check_private_key(ctx->native_handle()) != 1))
        return fail(errc::invalid_config, "webhook: the client key " + opt.key_file + " is not the key of " +
                                              opt.cert_file);
      if (ec)
        return fail(errc::invalid_config, "webhook: cannot read the client key " + opt.key_file + ": " + ec.message());
    }
    w->tls_ = ctx;
  }
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
      sig_->cv.wait(lock, [&] { return sig_->woken || sig_->stopping || sig_->draining; });
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
      bool stopped = false;
      for (int i = 0; i <= opt_.retries; ++i) {
        if (i > 0) {
          std::unique_lock lock(sig_->mu);
          if (sig_->cv.wait_for(lock, wait, [&] { return sig_->stopping; })) {
            stopped = true;
            break;
          }
          wait *= 2;
        }
        ++made;
        ++attempts_;
        why = attempt(u.id, body);
        if (why.empty()) break;
        spdlog::debug("webhook: call {}: attempt {} failed: {}", u.id, made, why);
        std::lock_guard lock(sig_->mu);
        if (sig_->stopping) {
          stopped = true;
          break;
        }
      }
      if (stopped) {
        ++abandoned_;
        spdlog::warn("webhook: call {} not posted to {}:{}: the server stopped during attempt {} ({})", u.id, url_.host,
                     url_.port, made, why);
        return;
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
    {
      std::lock_guard lock(sig_->mu);
      if (sig_->draining) {
        // The queue is empty and stop() waits for this: every call that ended before it is posted.
        sig_->drained = true;
        sig_->cv.notify_all();
        return;
      }
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
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  if (url_.tls)
    secure.emplace(ioc, *std::static_pointer_cast<ssl::context>(tls_));
  else
    plain.emplace(ioc);
  beast::tcp_stream& lowest = secure ? beast::get_lowest_layer(*secure) : *plain;
  asio::steady_timer deadline(ioc);
  http::request<http::string_body> req{http::verb::post, url_.target, 11};
  const bool default_port = url_.port == (url_.tls ? "443" : "80");
  const std::string host = url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
  req.set(http::field::host, default_port ? host : host + ":" + url_.port);
  req.set(http::field::user_agent, "sluice");
  req.set(http::field::content_type, "application/json");
  req.set("X-Sluice-Call", id);
  if (!opt_.secret.empty()) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    req.set("X-Sluice-Signature", webhook_signature(opt_.secret, now.count(), body));
  }
  req.body() = body;
  req.prepare_payload();
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_answer_bytes);
  const std::string timed_out_why = "no answer within " + std::to_string(opt_.timeout.count()) + " ms";
  std::string why = timed_out_why;
  bool finished = false, timed_out = false, name_mismatch = false;
  // One deadline for the whole attempt (the resolver has no timeout of its own).
  deadline.expires_after(opt_.timeout);
  deadline.async_wait([&](beast::error_code ec) {
    if (ec || finished) return;
    timed_out = true;
    resolver.cancel();
    beast::error_code ignored;
    lowest.socket().close(ignored);
  });
  auto done = [&](std::string w) {
    if (finished) return;
    finished = true;
    why = timed_out ? timed_out_why : std::move(w);
    deadline.cancel();
  };
  auto exchange = [&](auto& stream) {
    http::async_write(stream, req, [&](beast::error_code ec3, std::size_t) {
      if (ec3) return done("send: " + ec3.message());
      http::async_read(stream, buf, parser, [&](beast::error_code ec4, std::size_t) {
        if (ec4) return done("answer: " + ec4.message());
        const int status = static_cast<int>(parser.get().result_int());
        done(status / status_class == status_ok_class ? "" : "answered " + std::to_string(status));
      });
    });
  };
  resolver.async_resolve(url_.host, url_.port, [&](beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return done("resolve: " + ec.message());
    lowest.async_connect(results, [&](beast::error_code ec2, const tcp::endpoint&) {
      if (ec2) return done("connect: " + ec2.message());
      if (!secure) return exchange(*plain);
      SSL* handle = secure->native_handle();
      // SNI for names only (RFC 6066 forbids IP literals); the certificate must name the host.
      if (!is_ip_literal(url_.host)) SSL_set_tlsext_host_name(handle, url_.host.c_str());
      // The chain is OpenSSL's to check (preverified); the name is checked on the server's own
      // certificate (depth 0), and a chain that verifies but names another host is told apart.
      secure->set_verify_callback(
          [&, check = ssl::host_name_verification(url_.host)](bool preverified, ssl::verify_context& vc) mutable {
            const bool ok = check(preverified, vc);
            if (preverified && !ok) name_mismatch = true;
            return ok;
          });
      secure->async_handshake(ssl::stream_base::client, [&, handle](beast::error_code ec5) {
        if (ec5) {
          if (name_mismatch) return done("tls handshake: the server's certificate does not name " + url_.host);
          const long verdict = SSL_get_verify_result(handle);
          std::string detail = ec5.message();
          if (verdict != X509_V_OK) detail += " (" + std::string(X509_verify_cert_error_string(verdict)) + ")";
          return done("tls handshake: " + detail);
        }
        exchange(*secure);
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

void webhook::stop(std::chrono::milliseconds drain) {
  bool draining = false;
  {
    std::unique_lock lock(sig_->mu);
    if (sig_->stop_called) return;
    sig_->stop_called = true;
    if (drain.count() > 0 && thread_.joinable()) {
      sig_->draining = draining = true;
    } else {
      sig_->stopping = true;
      if (sig_->current) sig_->current->stop();
    }
  }
  sig_->cv.notify_all();
  if (draining) {
    if (opt_.on_drain) opt_.on_drain();
    std::unique_lock lock(sig_->mu);
    if (!sig_->cv.wait_for(lock, drain, [&] { return sig_->drained; }))
      spdlog::warn("webhook: calls still not posted after calls.webhook_drain_ms = {}: abandoning them", drain.count());
    sig_->stopping = true;
    if (sig_->current) sig_->current->stop();
  }
  sig_->cv.notify_all();
  if (thread_.joinable()) thread_.join();
  if (sub_) {
    // What is still queued will never be posted.
    const auto left = sub_->take().size();
    abandoned_ += left;
    if (left > 0) spdlog::warn("webhook: {} ended call(s) still queued are not posted: the server stopped", left);
    sub_->cancel();
  }
}

webhook::counts webhook::stats() const {
  counts c;
  c.delivered = delivered_;
  c.given_up = given_up_;
  c.attempts = attempts_;
  c.dropped = sub_ ? sub_->lost() : 0;
  c.abandoned = abandoned_;
  return c;
}

webhook::~webhook() { stop(); }

}  // namespace sluice::net::calls
