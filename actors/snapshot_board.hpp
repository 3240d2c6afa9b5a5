#pragma once
/// snapshot_board: where the metrics actor publishes its newest JSON snapshot, so that readers
/// outside the actor world (the network layer's /metrics, /v1/actors and dashboard, the CLI)
/// take it without sending a message or waiting on any actor. A snapshot is immutable once
/// published; publishing swaps a shared pointer under a mutex held only for the swap, so a
/// reader never waits for a snapshot to be built.
///
/// Threading: publish() from the metrics actor, latest() from any thread.

#include <memory>
#include <mutex>
#include <string>

namespace sluice::actors {

class snapshot_board {
 public:
  /// Replaces the published snapshot with `json`.
  void publish(std::string json) {
    auto next = std::make_shared<const std::string>(std::move(json));
    std::lock_guard lock(mutex_);
    latest_ = std::move(next);
  }
  /// Publishes `json` only if nothing has been published yet (a start-up snapshot must not
  /// replace a newer one the metrics actor published meanwhile).
  void publish_first(std::string json) {
    auto next = std::make_shared<const std::string>(std::move(json));
    std::lock_guard lock(mutex_);
    if (latest_->empty()) latest_ = std::move(next);
  }
  /// The newest published snapshot; "" before the first publish.
  std::shared_ptr<const std::string> latest() const {
    std::lock_guard lock(mutex_);
    return latest_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const std::string> latest_ = std::make_shared<const std::string>();
};

}  // namespace sluice::actors
