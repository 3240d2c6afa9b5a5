#pragma once
/// The link between one SIP call channel and the engine: a small CAF actor that asks the
/// supervisor for a channel (actors::channel_request, 16-bit PCM at the codec's rate), holds the
/// audio that arrives before the channel is open (bounded), forwards the rest, hands every
/// partial and final to the call registry, and tells the call when the channel has drained.
///
/// Messages it takes (from any thread, with caf::anon_send): audio_atom + std::vector<uint8_t>
/// (pcm_s16le), end_atom (no more audio: the channel finishes its utterance, so a hang-up
/// mid-utterance keeps its final).

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <caf/all.hpp>

#include "actors/actor_types.hpp"
#include "actors/messages.hpp"
#include "net/calls/call_registry.hpp"

namespace sluice::net::sip {

/// Ends a call in the registry once it is over (hung up, cancelled, ...) and every channel of
/// it has drained, so that finals of the last utterance are kept. Thread-safe.
class call_completion {
 public:
  call_completion(std::shared_ptr<calls::call_registry> registry, calls::call_id id, int channels);
  /// One channel has delivered everything (or could not open).
  void channel_done();
  /// The call is over for `reason`; the first reason given is kept.
  void call_over(const std::string& reason);
  calls::call_registry& registry() { return *registry_; }
  const calls::call_id& id() const { return id_; }

 private:
  void end_if_done();  // with mu_ held
  std::mutex mu_;
  std::shared_ptr<calls::call_registry> registry_;
  calls::call_id id_;
  int remaining_;
  bool over_ = false, ended_ = false;
  std::string reason_;
};

struct bridge_args {
  actors::supervisor_actor_type supervisor;
  actors::channel_request request;
  std::shared_ptr<call_completion> call;
  int channel_index = 0;
  /// Called once with whether the channel opened (and why not), from the actor's thread.
  std::function<void(bool ok, const std::string& reason)> on_open;
};

/// Spawns the bridge; it asks for its channel at once.
caf::actor spawn_channel_bridge(caf::actor_system& sys, bridge_args args);

}  // namespace sluice::net::sip
