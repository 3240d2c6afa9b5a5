#pragma once
/// Back-off for clients that keep presenting invalid API keys (a key-guessing defence).
///
/// Per client IP address: after `max_failures` invalid keys within `window_s` seconds, every
/// further request from that address is refused for `lockout_s` seconds (the server answers 429
/// with Retry-After, before any WebSocket upgrade), even one with a valid key: a guesser cannot
/// tell a hit from a miss while locked out. Other addresses are unaffected. Only invalid keys
/// count: a missing key (a browser's first visit) and a valid key without the scope (403) do
/// not. `max_failures` = 0 turns the limiter off.
///
/// Memory is bounded: at most `max_tracked` addresses are remembered; when full, addresses
/// whose window and lockout have passed are forgotten first, then the oldest one.
/// Thread-safe (the network threads share one).

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "config/auth_config.hpp"

namespace sluice::net::auth {

class failure_limiter {
 public:
  using clock = std::chrono::steady_clock;

  explicit failure_limiter(const config::auth_config& cfg);

  /// Seconds until `ip` may try again (at least 1), or nullopt when it is not locked out.
  std::optional<int> retry_after(const std::string& ip, clock::time_point now = clock::now()) const;

  /// Records an invalid key from `ip`; true when this failure locks it out.
  bool record_failure(const std::string& ip, clock::time_point now = clock::now());

  /// How many lockouts have begun since start (for /metrics and the tests).
  std::size_t lockouts() const;

  /// Addresses remembered now (bounded by the constructor's max_tracked).
  std::size_t tracked() const;

  bool enabled() const { return max_failures_ > 0; }

  /// What a locked-out client is told, the same over HTTP (429) and RTSP (503): "too many
  /// invalid API keys from this address (auth.max_failures = 5 within 60 s): retry in 30 s".
  std::string lockout_message(int retry_after_s) const;

 private:
  struct entry {
    clock::time_point window_start{};
    int failures = 0;
    clock::time_point locked_until{};
  };

  void make_room(clock::time_point now);

  int max_failures_;
  clock::duration window_, lockout_;
  std::size_t max_tracked_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, entry> entries_;
  std::size_t lockouts_ = 0;
};

}  // namespace sluice::net::auth
