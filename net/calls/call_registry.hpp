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

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/messages.hpp"

namespace sluice::net::calls {

using call_id = std::string;  ///< opaque, unique in this registry (and its store)

/// What an ingest knows of a call when it starts.
struct call_start {
  /// Which ingest: "stream" (sluice WS), "funasr", "sherpa", "vosk", "audio_fork", "jambonz",
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
};

class call_registry {
 public:
  /// Keeps at most `max_recent_ended` ended calls in memory (the oldest go first); live calls
  /// are always kept.
  explicit call_registry(std::size_t max_recent_ended = 1000);
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

 private:
  mutable std::mutex mu_;
  std::size_t max_recent_ended_;
  std::string prefix_;  // random per registry: ids are not guessable from one another
  uint64_t next_ = 1;
  std::vector<std::shared_ptr<call_record>> calls_;  // in order of begin()
};

}  // namespace sluice::net::calls
