#pragma once
/// Calls as first-class objects (DESIGN.md "Calls, results and tenants"): every ingested source
/// (a WebSocket stream of any dialect, a switch's fork, a SIP or RTSP session, an upload) is one
/// call with labelled channels; each channel's results are kept with the call.
///
/// The ingest side (a protocol session) calls begin() once, result() for every partial and final
/// of each of its channels, event() for non-speech events (DTMF, hold, metadata), and end() once.
/// Readers (the HTTP API, /v1/events, storage, webhooks) see the calls through this registry.
///
/// Threading: every member is thread-safe and never blocks on I/O (storage and webhooks, when
/// configured, run on their own threads fed by bounded queues), so network strands and actors
/// may call it directly.
///
/// Live updates (call_start, partial, final, event, call_end, metadata) go to subscribers
/// (net/calls/call_subscription.hpp): each has a bounded queue, is woken outside the registry's
/// lock, and takes its updates on its own thread; none can make an ingest wait.
/// Memory: the live calls and at most max_recent_ended ended ones, each with all its finals.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/messages.hpp"
#include "net/calls/call_subscription.hpp"

namespace sluice::net::calls {

using call_id = std::string;  ///< opaque, unique in this registry (and its store)

/// What an ingest knows of a call when it starts.
struct call_start {
  /// Which ingest: "stream" (sluice WS), "funasr", "sherpa", "vosk", "deepgram", "audio_fork", "jambonz",
  /// "twilio", "audiohook", "audiosocket", "sip", "siprec", "rtsp", "upload".
  std::string source;
  std::string tenant;       ///< the owner (auth); empty when the server has no keys
  std::string external_id;  ///< the peer's id of the call (Twilio callSid, SIP Call-ID, ...); may be empty
  /// One label per channel, in channel order: "mono", "caller"/"callee", "customer"/"agent", a
  /// SIPREC participant's name, ...
  std::vector<std::string> channel_labels;
  nlohmann::json metadata = nlohmann::json::object();  ///< the protocol's own metadata
};

/// One channel's kept results.
struct channel_record {
  std::string label;
  std::vector<actors::transcript_event> finals;  ///< in utterance order
  std::string partial;                           ///< the newest partial text of an open utterance
};

/// A non-speech event of a call (DTMF digit, hold, metadata update, ...).
struct call_event {
  std::string type;
  int channel = -1;  ///< -1: the whole call
  int64_t at_ms = 0;  ///< ms since the call began
  nlohmann::json data = nlohmann::json::object();
};

struct call_record {
  call_id id;
  call_start start;
  std::chrono::system_clock::time_point began, ended;
  bool live = true;
  std::string end_reason;  ///< "" while live; e.g. "hangup", "client closed", "error: ..."
  std::vector<channel_record> channels;
  std::vector<call_event> events;
  std::size_t events_dropped = 0;  ///< events past max_events_per_call: counted, not kept or published
};

class call_registry {
 public:
  /// Keeps at most `max_recent_ended` ended calls in memory (the oldest go first); live calls
  /// are always kept. A call keeps at most `max_events_per_call` events (later ones are counted
  /// in events_dropped).
  explicit call_registry(std::size_t max_recent_ended = 1000, std::size_t max_events_per_call = 10000);
  virtual ~call_registry() = default;
  call_registry(const call_registry&) = delete;
  call_registry& operator=(const call_registry&) = delete;

  /// Registers a new live call and returns its id.
  call_id begin(call_start start);
  /// A partial or final of channel `channel` (an index into start.channel_labels); ignored for
  /// an unknown or ended call or an out-of-range channel.
  void result(const call_id& id, int channel, const actors::transcript_event& ev);
  /// A non-speech event (see call_event); ignored for an unknown or ended call.
  void event(const call_id& id, call_event ev);
  /// Merges `metadata` (a JSON object) into the call's metadata (SIPREC updates, ...).
  void update_metadata(const call_id& id, const nlohmann::json& metadata);
  /// The call is over; `reason` is kept with it. Further results are ignored.
  void end(const call_id& id, std::string reason);

  /// A copy of one call; nullopt if unknown (or evicted).
  std::optional<call_record> get(const call_id& id) const;
  /// Copies of the live and recent calls, newest first.
  std::vector<call_record> list() const;

  /// Which calls list(query) copies.
  struct query {
    std::size_t limit = SIZE_MAX;       ///< at most this many, the newest
    bool live_only = false;             ///< only calls not yet ended
    std::optional<std::string> tenant;  ///< only this tenant's calls; nullopt: every tenant's
  };
  /// Copies of the calls `q` selects, newest (latest begun) first.
  std::vector<call_record> list(const query& q) const;

  /// Subscribes to the updates `filter` selects (see call_subscription.hpp). `wake` is called
  /// outside the registry's lock, on the ingest's thread, when an update lands in the empty
  /// queue or the subscriber is dropped: it must only signal (post to a strand, notify a
  /// condition variable), never block. cancel() the subscription to stop.
  std::shared_ptr<subscription> subscribe(subscription_filter filter, std::size_t max_queued, overflow policy,
                                          std::function<void()> wake);

  /// Puts back ended calls read from a store (net/calls/call_store.hpp) at start: they keep
  /// their ids and times, are listed by the time they began, and count against the bound
  /// (the oldest are left out). Live records are ignored. No subscriber hears of them.
  void restore(std::vector<call_record> ended);

  struct counts {
    std::size_t live = 0, ended = 0;  ///< calls in memory
    std::size_t subscribers = 0;
    uint64_t subscribers_dropped = 0;  ///< dropped for falling behind, since start
  };
  counts stats() const;

 private:
  struct entry {
    std::shared_ptr<call_record> rec;
    uint64_t order = 0;  // list order: later begun (or restored as later begun) is newer
  };
  // Queues `u` for every subscriber that wants it (under mu_); the ones to wake are appended.
  void publish_locked(const call_update& u, std::vector<std::shared_ptr<subscription>>& to_wake);
  bool anyone_wants_locked(update_kind kind, const call_record& c) const;
  void evict_locked();
  static void wake_all(const std::vector<std::shared_ptr<subscription>>& subs);

  mutable std::mutex mu_;
  std::size_t max_recent_ended_;
  std::size_t max_events_per_call_;
  std::string prefix_;  // random per registry: ids are not guessable from one another
  uint64_t next_ = 1;
  uint64_t next_order_ = 1;
  std::unordered_map<call_id, entry> calls_;
  std::deque<call_id> ended_;  // ended calls in memory, oldest end first: eviction order
  std::vector<std::shared_ptr<subscription>> subs_;
  uint64_t subscribers_dropped_ = 0;
};

}  // namespace sluice::net::calls
