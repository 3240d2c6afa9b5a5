#include "net/calls/call_subscription.hpp"

namespace sluice::net::calls {

subscription::subscription(subscription_filter filter, std::size_t max_queued, overflow policy,
                           std::function<void()> wake)
    : filter_(std::move(filter)), max_queued_(max_queued == 0 ? 1 : max_queued), policy_(policy),
      wake_(wake ? std::make_shared<const std::function<void()>>(std::move(wake)) : nullptr) {}

std::vector<call_update> subscription::take(std::size_t max) {
  std::lock_guard lock(mu_);
  std::vector<call_update> out;
  const std::size_t n = std::min(max, queue_.size());
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return out;
}

bool subscription::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::string subscription::drop_reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

uint64_t subscription::lost() const {
  std::lock_guard lock(mu_);
  return lost_;
}

void subscription::cancel() {
  // The wake function is released here, on the canceller's thread, and not when the registry
  // lets go of the subscription: what it captured (an io_context's strand) may not outlive its
  // owner, and the registry can outlive the server (ASan caught a strand destroyed after its
  // io_context at exit).
  std::shared_ptr<const std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    queue_.clear();
    wake.swap(wake_);
  }
}

bool subscription::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_ || dropped_;
}

bool subscription::wants(update_kind kind, const std::string& id, const std::string& tenant) const {
  if ((filter_.kinds & static_cast<uint8_t>(kind)) == 0) return false;
  if (!filter_.call.empty() && filter_.call != id) return false;
  return !filter_.tenant || *filter_.tenant == tenant;
}

bool subscription::offer(call_update u) {
  std::lock_guard lock(mu_);
  if (cancelled_ || dropped_) return false;
  if (queue_.size() >= max_queued_) {
    if (policy_ == overflow::drop_update) {
      ++lost_;
      return false;
    }
    // The subscriber fell behind: it is dropped rather than held (its updates would otherwise
    // grow without bound or make the ingest wait).
    dropped_ = true;
    reason_ = "fell behind: " + std::to_string(max_queued_) + " updates queued (calls.subscriber_queue)";
    queue_.clear();
    return true;
  }
  const bool was_empty = queue_.empty();
  queue_.push_back(std::move(u));
  return was_empty;
}

void subscription::wake() const {
  std::shared_ptr<const std::function<void()>> wake;
  {
    std::lock_guard lock(mu_);
    wake = wake_;
  }
  if (wake) (*wake)();
}

}  // namespace sluice::net::calls
