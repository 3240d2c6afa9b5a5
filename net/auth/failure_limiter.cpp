#include "net/auth/failure_limiter.hpp"

#include <algorithm>

namespace sluice::net::auth {

failure_limiter::failure_limiter(const config::auth_config& cfg)
    : max_failures_(cfg.max_failures), window_(std::chrono::seconds(cfg.failure_window_s)),
      lockout_(std::chrono::seconds(cfg.lockout_s)), max_tracked_(static_cast<std::size_t>(cfg.max_tracked_clients)) {}

std::optional<int> failure_limiter::retry_after(const std::string& ip, clock::time_point now) const {
  if (!enabled()) return std::nullopt;
  std::lock_guard lock(mu_);
  const auto it = entries_.find(ip);
  if (it == entries_.end() || it->second.locked_until <= now) return std::nullopt;
  // Rounded up, so that a client that waits exactly this long is let in.
  const auto left = std::chrono::ceil<std::chrono::seconds>(it->second.locked_until - now).count();
  return static_cast<int>(std::max<decltype(left)>(1, left));
}

bool failure_limiter::record_failure(const std::string& ip, clock::time_point now) {
  if (!enabled()) return false;
  std::lock_guard lock(mu_);
  auto it = entries_.find(ip);
  if (it == entries_.end()) {
    make_room(now);
    it = entries_.emplace(ip, entry{now, 0, {}}).first;
  }
  auto& e = it->second;
  if (e.locked_until > now) return false;  // already locked out: the lockout is not extended
  if (now - e.window_start >= window_) {
    e.window_start = now;
    e.failures = 0;
  }
  if (++e.failures < max_failures_) return false;
  e.locked_until = now + lockout_;
  e.failures = 0;
  e.window_start = e.locked_until;  // a fresh window after the lockout
  ++lockouts_;
  return true;
}

std::size_t failure_limiter::lockouts() const {
  std::lock_guard lock(mu_);
  return lockouts_;
}

std::size_t failure_limiter::tracked() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void failure_limiter::make_room(clock::time_point now) {
  if (entries_.size() < max_tracked_) return;
  // Forget what no longer matters: windows that have passed, lockouts that are over.
  for (auto it = entries_.begin(); it != entries_.end();) {
    const bool stale = it->second.locked_until <= now && now - it->second.window_start >= window_;
    it = stale ? entries_.erase(it) : std::next(it);
  }
  if (entries_.size() < max_tracked_) return;
  // Still full of live entries (many addresses failing at once): drop the one whose window
  // began first, so that the table stays bounded.
  const auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
    return a.second.window_start < b.second.window_start;
  });
  entries_.erase(oldest);
}

std::string failure_limiter::lockout_message(int retry_after_s) const {
  return "too many invalid API keys from this address (auth.max_failures = " + std::to_string(max_failures_) +
         " within " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(window_).count()) +
         " s): retry in " + std::to_string(retry_after_s) + " s";
}

}  // namespace sluice::net::auth
