#pragma once
/// The webhook of [calls] webhook_url: when a call ends, its whole document (call_json.hpp, the
/// GET /v1/calls/{id} body) is POSTed there as application/json, with the header
/// `X-Sluice-Call: <id>`. A 2xx answer delivers it; anything else (another status, a refused
/// connection, no answer within timeout) is retried after backoff, 2x backoff, 4x ... up to
/// `retries` more times, then given up (logged, counted).
///
/// Never blocks the engine: the webhook subscribes to call_end updates with a bounded queue
/// ([calls] webhook_queue, overflow::drop_update: a call that finds it full is not posted and is
/// counted) and posts one call at a time from a thread of its own.
///
/// https:// URLs are posted over TLS (OpenSSL): the server's certificate must chain to the
/// system's trusted CAs, or to those of `ca_file` when set, and name the URL's host (DNS name or
/// IP address; SNI is sent for DNS names). A failed verification is an attempt's failure like a
/// refused connection, named in the log ("tls handshake: certificate verify failed ...").
///
/// With a `secret` each POST carries `X-Sluice-Signature: t=<unix seconds>,v1=<hex>`, where hex
/// is HMAC-SHA256(secret, "<t>.<body>"): the receiver recomputes it over the raw body to know the
/// call came from this engine, and refuses old timestamps against replays. Retries sign afresh.
///
/// stop(drain) first lets the queue empty for up to `drain` (calls that end while the server
/// shuts down are posted), then abandons what is left; those calls are logged and counted.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "config/error.hpp"
#include "net/calls/call_registry.hpp"

namespace boost::asio {
class io_context;
}

namespace sluice::net::calls {

/// http[s]://host[:port][/path] split up (port 80 or 443 when absent, path "/" when absent; an
/// IPv6 host is written in brackets, [::1]:8443, and kept without them).
struct http_url {
  std::string host;
  std::string port = "80";
  std::string target = "/";
  bool tls = false;  ///< https://
};
/// errc::invalid_config naming what is wrong (neither http:// nor https://, no host, a bad port).
result<http_url> parse_http_url(const std::string& url);

/// The value of the X-Sluice-Signature header for `body` signed at unix time `t`:
/// "t=<t>,v1=<lower-case hex of HMAC-SHA256(secret, "<t>.<body>")>".
std::string webhook_signature(const std::string& secret, int64_t t, const std::string& body);

/// The webhook's counters in Prometheus text format (appended to /metrics when a webhook is
/// configured, zeros included from the first scrape): sluice_webhook_calls_total{outcome=
/// "delivered"|"given_up"|"dropped"|"abandoned"} and sluice_webhook_attempts_total.
std::string webhook_prometheus(uint64_t delivered, uint64_t given_up, uint64_t dropped, uint64_t abandoned,
                               uint64_t attempts);

/// The key in a secret file: its content without trailing whitespace (a newline an editor
/// added). errc::invalid_config when it cannot be read or holds no key.
result<std::string> read_webhook_secret(const std::string& path);

class webhook {
 public:
  struct options {
    std::string url;
    std::chrono::milliseconds timeout{5000};  ///< per attempt: resolve, connect, send, answer
    int retries = 3;                          ///< attempts after the first failed one
    std::chrono::milliseconds backoff{500};   ///< before the first retry; doubled each retry
    std::size_t max_queued = 1024;
    /// https: a PEM file of the CAs whose certificates are trusted; "" trusts the system's.
    std::string ca_file;
    /// https: a PEM client certificate (chain) and its private key, presented when the server
    /// asks for one (mutual TLS); both or neither, "" for none.
    std::string cert_file, key_file;
    /// The HMAC-SHA256 key of X-Sluice-Signature; "" sends no signature.
    std::string secret;
    /// Called on the webhook's thread once per call taken, when it is delivered or given up:
    /// (call id, delivered, attempts made, the last failure or ""). Tests wait on it.
    std::function<void(const std::string&, bool, int, const std::string&)> on_done;
    /// Called by stop(drain) with drain > 0 once the webhook is draining, before it waits
    /// (tests use it to know the stop has begun).
    std::function<void()> on_drain;
  };

  /// Subscribes to `reg` and starts the thread. errc::invalid_config for a bad url, a ca_file
  /// or client certificate with an http:// url, a ca_file OpenSSL cannot read, or a client
  /// certificate or key that cannot be read, only one of them, or a key of another certificate.
  static result<std::unique_ptr<webhook>> start(call_registry& reg, options opt);
  ~webhook();
  webhook(const webhook&) = delete;
  webhook& operator=(const webhook&) = delete;

  /// Stops the thread. With drain > 0 the calls queued (and those that end meanwhile) are
  /// still posted, retries included, until the queue is empty or `drain` has passed; then, or at
  /// once with drain 0, an attempt in flight is abandoned and calls still queued are not posted
  /// (counted as abandoned, and logged). Later calls return at once.
  void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(0));

  struct counts {
    uint64_t delivered = 0;
    uint64_t given_up = 0;  ///< calls whose every attempt failed
    uint64_t attempts = 0;
    uint64_t dropped = 0;   ///< calls not posted: the queue was full when they ended
    uint64_t abandoned = 0; ///< calls not posted (or not finished) because stop() came first
  };
  counts stats() const;

 private:
  webhook() = default;
  void run();
  // One POST; "" when answered 2xx, else why not.
  std::string attempt(const std::string& id, const std::string& body);

  options opt_;
  http_url url_;
  std::shared_ptr<void> tls_;  // the boost::asio::ssl::context of https urls
  std::shared_ptr<subscription> sub_;
  std::thread thread_;
  struct signal {
    std::mutex mu;
    std::condition_variable cv;
    bool woken = false, stopping = false;
    bool draining = false, drained = false;  // stop(drain) began; the thread emptied the queue
    bool stop_called = false;
    boost::asio::io_context* current = nullptr;  // the attempt in flight, stopped by stop()
  };
  std::shared_ptr<signal> sig_ = std::make_shared<signal>();
  std::atomic<uint64_t> delivered_{0}, given_up_{0}, attempts_{0}, abandoned_{0};
};

}  // namespace sluice::net::calls
