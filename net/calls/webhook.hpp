#pragma once
/// The webhook of [calls] webhook_url: when a call ends, its whole document (call_json.hpp, the
/// GET /v1/calls/{id} body) is POSTed there as application/json, with the header
/// `X-Sluice-Call: <id>`. A 2xx answer delivers it; anything else (another status, a refused
/// connection, no answer within timeout) is retried after backoff, 2x backoff, 4x ... up to
/// `retries` more times, then given up (logged, counted).
///
/// Never blocks the engine: the webhook subscribes to call_end updates with a bounded queue
/// ([calls] webhook_queue, overflow::drop_update: a call that finds it full is not posted and is
/// counted) and posts one call at a time from a thread of its own. http:// only.

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

/// http://host[:port][/path] split up (port 80 when absent, path "/" when absent).
struct http_url {
  std::string host;
  std::string port = "80";
  std::string target = "/";
};
/// errc::invalid_config naming what is wrong (not http://, no host, a bad port).
result<http_url> parse_http_url(const std::string& url);

class webhook {
 public:
  struct options {
    std::string url;
    std::chrono::milliseconds timeout{5000};  ///< per attempt: resolve, connect, send, answer
    int retries = 3;                          ///< attempts after the first failed one
    std::chrono::milliseconds backoff{500};   ///< before the first retry; doubled each retry
    std::size_t max_queued = 1024;
    /// Called on the webhook's thread once per call taken, when it is delivered or given up:
    /// (call id, delivered, attempts made, the last failure or ""). Tests wait on it.
    std::function<void(const std::string&, bool, int, const std::string&)> on_done;
  };

  /// Subscribes to `reg` and starts the thread. errc::invalid_config for a bad url.
  static result<std::unique_ptr<webhook>> start(call_registry& reg, options opt);
  ~webhook();
  webhook(const webhook&) = delete;
  webhook& operator=(const webhook&) = delete;

  /// Stops the thread: an attempt in flight is abandoned, calls still queued are not posted.
  void stop();

  struct counts {
    uint64_t delivered = 0;
    uint64_t given_up = 0;  ///< calls whose every attempt failed
    uint64_t attempts = 0;
    uint64_t dropped = 0;   ///< calls not posted: the queue was full when they ended
  };
  counts stats() const;

 private:
  webhook() = default;
  void run();
  // One POST; "" when answered 2xx, else why not.
  std::string attempt(const std::string& id, const std::string& body);

  options opt_;
  http_url url_;
  std::shared_ptr<subscription> sub_;
  std::thread thread_;
  struct signal {
    std::mutex mu;
    std::condition_variable cv;
    bool woken = false, stopping = false;
    boost::asio::io_context* current = nullptr;  // the attempt in flight, stopped by stop()
  };
  std::shared_ptr<signal> sig_ = std::make_shared<signal>();
  std::atomic<uint64_t> delivered_{0}, given_up_{0}, attempts_{0};
};

}  // namespace sluice::net::calls
