#pragma once
/// A live-event subscriber of the call registry (net/calls/call_registry.hpp): /v1/events
/// sockets, the store's writer, the webhook sender.
///
/// The ingest never waits for a subscriber: the registry appends each update to every matching
/// subscriber's bounded queue (a push under the subscriber's own short lock) and, when the queue
/// was empty, calls its `wake` function after the registry's lock is released. The subscriber
/// then take()s its updates on its own thread or strand. A queue that is full when an update
/// arrives either drops the subscriber (overflow::drop_subscriber: /v1/events, whose client
/// fell behind; its queue is cleared, `wake` is called once more and dropped() says why) or
/// drops that update and counts it (overflow::drop_update: the store and the webhook, which
/// must go on).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/messages.hpp"

namespace sluice::net::calls {

struct call_record;
struct call_event;

/// What happened to a call. Bit values: a subscription's `kinds` is a mask of them.
enum class update_kind : uint8_t { call_start = 1, partial = 2, final = 4, event = 8, call_end = 16, metadata = 32 };

/// The kinds /v1/events sends (metadata updates are for the store).
inline constexpr uint8_t live_event_kinds = 1 | 2 | 4 | 8 | 16;
inline constexpr uint8_t all_kinds = live_event_kinds | 32;

/// One update of one call.
struct call_update {
  update_kind kind = update_kind::call_start;
  std::string id;      ///< the call
  std::string tenant;  ///< its owner
  int channel = -1;    ///< partial, final: the channel index; event: its channel (-1: the call)
  std::string label;   ///< partial, final: the channel's label
  actors::transcript_event result;  ///< partial, final
  std::shared_ptr<const call_event> event;  ///< event
  nlohmann::json metadata;                  ///< metadata: the call's whole metadata after the merge
  /// call_start: the call as it began (no results); call_end: the whole call, ended.
  std::shared_ptr<const call_record> call;
};

/// Which updates a subscriber gets.
struct subscription_filter {
  std::string call;                   ///< one call only; empty: every call
  std::optional<std::string> tenant;  ///< one tenant's calls only; nullopt: every tenant's
  uint8_t kinds = live_event_kinds;   ///< a mask of update_kind bits
};

enum class overflow : uint8_t { drop_subscriber, drop_update };

class subscription {
 public:
  subscription(subscription_filter filter, std::size_t max_queued, overflow policy, std::function<void()> wake);
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;

  /// Up to `max` queued updates, oldest first (empty when none). After a wake, take until empty:
  /// the next wake comes only when an update lands in an empty queue.
  std::vector<call_update> take(std::size_t max = SIZE_MAX);
  /// True once the registry dropped this subscriber (its queue was full); see drop_reason().
  bool dropped() const;
  std::string drop_reason() const;
  /// Updates dropped under overflow::drop_update.
  uint64_t lost() const;
  /// Stops the updates (idempotent); the registry forgets the subscription on its next update.
  void cancel();
  bool cancelled() const;

  const subscription_filter& filter() const { return filter_; }
  /// True when `u` passes the filter.
  bool wants(update_kind kind, const std::string& id, const std::string& tenant) const;

  /// The registry's side: queues `u`; true when the subscriber must be woken (the queue was
  /// empty, or the subscriber was just dropped). Never blocks on anything but this lock.
  bool offer(call_update u);
  /// Calls the wake function (the registry calls it outside its lock).
  void wake() const;

 private:
  const subscription_filter filter_;
  const std::size_t max_queued_;
  const overflow policy_;
  std::shared_ptr<const std::function<void()>> wake_;  ///< null once cancelled (under mu_)
  mutable std::mutex mu_;
  std::deque<call_update> queue_;
  bool dropped_ = false, cancelled_ = false;
  std::string reason_;
  uint64_t lost_ = 0;
};

}  // namespace sluice::net::calls
