#pragma once
/// The engine channels of one call that a switch sends (AudioSocket, mod_audio_fork, jambonz,
/// Twilio, AudioHook): one channel per label, opened together; the call is registered in the
/// server's call registry (net/calls/call_registry.hpp) and every partial, final and event is
/// recorded there as it comes.
///
/// Lifecycle: open() registers the call and asks the engine for its channels; audio() may be
/// called at once (it is held until its channel is open); end() says no more audio comes, and
/// when every channel has delivered its finals `drained` runs and the call ends in the registry
/// with the reason given to end(); abort() stops the channels at once (no more results) and ends
/// the call. Destroying an unfinished call_channels aborts it.
///
/// Speed: a switch sends in real time and is not flow-controlled, so each channel's audio passes
/// a token bucket (net/sip/rate_limiter.hpp) counting microseconds of audio: server.switch_max_speed
/// seconds of audio per second, with server.switch_burst_s seconds of audio saved up. A call past it fails
/// (bad_request: the sender's fault) before the excess is sent to the engine or held early.
/// Audio held before a channel opens is also capped (max_early_bytes), with or without the speed
/// cap.
///
/// Threading: every member must be called on `exec` (the owning session's strand); every
/// callback runs there too. The callbacks run only while the call_channels is alive, so they may
/// capture the owner weakly. An exception thrown by a callback is logged and aborts the call.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <caf/all.hpp>

#include "actors/messages.hpp"
#include "actors/refusal.hpp"
#include "net/calls/call_registry.hpp"
#include "net/server.hpp"
#include "net/sip/rate_limiter.hpp"

namespace sluice::net::switches {

class call_channels : public std::enable_shared_from_this<call_channels> {
 public:
  struct callbacks {
    /// Every channel is open.
    std::function<void()> ready;
    /// A partial or final of channel `index` (already recorded in the registry).
    std::function<void(int index, const actors::transcript_event& ev)> result;
    /// Every channel has delivered its finals after end(); the call has ended in the registry.
    std::function<void()> drained;
    /// A channel was refused or failed, or the switch broke a limit; the call has been aborted
    /// and ended with "error: why". `code`: the engine's refusal (actors::refusal), bad_request
    /// for a limit; `limit`: the switch broke a limit of this class (sent too fast, or too much
    /// before its channels opened): a policy violation, not a refused request.
    std::function<void(const std::string& why, actors::refusal code, bool limit)> failed;
  };

  /// Registers `start` (one channel per start.channel_labels) and asks the engine for the
  /// channels, each made from `request` (its label set per channel). `log_id` names the call's
  /// connection in the logs.
  static std::shared_ptr<call_channels> open(std::shared_ptr<server_state> st, boost::asio::any_io_executor exec,
                                             calls::call_start start, actors::channel_request request, callbacks cb,
                                             uint64_t log_id);
  ~call_channels();
  call_channels(const call_channels&) = delete;
  call_channels& operator=(const call_channels&) = delete;

  /// Encoded audio (the request's codec and rate) for channel `index`; ignored after end() or
  /// abort() and for an index out of range.
  void audio(int index, std::vector<uint8_t> bytes);
  /// A non-speech event of the call (recorded in the registry; at_ms is set here when 0).
  void event(calls::call_event ev);
  /// Merges metadata into the call's (calls::call_registry::update_metadata).
  void update_metadata(const nlohmann::json& metadata);
  /// No more audio: the channels finish what they have; then `drained`, and the call ends with
  /// `reason`. A second end() is ignored.
  void end(std::string reason);
  /// Stops the channels now and ends the call with `reason`; no callback runs afterwards.
  void abort(std::string reason);

  const calls::call_id& id() const { return id_; }
  /// The call's strand (its connection's executor); use it only while the server's I/O context
  /// exists (under server_state::io).
  const boost::asio::any_io_executor& executor() const { return exec_; }
  int channel_count() const { return static_cast<int>(handles_.size()); }
  bool ended() const { return end_requested_ || done_; }
  /// Whether the call is over (drained, failed or aborted).
  bool done() const { return done_; }

  // -- called on `exec` by the call's bridge actor --------------------------------------------
  void on_open(int index, const actors::open_reply& r);
  void on_event(int index, const actors::transcript_event& ev);
  void on_drained(int index);
  void on_lost(const std::string& why);

 private:
  call_channels() = default;
  void send_end();
  void fail(const std::string& why, actors::refusal code, bool limit = false);
  void finish(const std::string& reason);
  template <class F>
  void guarded(const char* where, F&& f) noexcept;

  std::shared_ptr<server_state> st_;
  boost::asio::any_io_executor exec_;
  callbacks cb_;
  uint64_t log_id_ = 0;
  calls::call_id id_;
  std::chrono::steady_clock::time_point began_;
  caf::actor bridge_;
  std::vector<actors::channel_actor_type> handles_;
  std::vector<std::vector<std::vector<uint8_t>>> early_;  // per channel, audio before it opened
  std::vector<sip::rate_limiter> speed_;                  // per channel: server.switch_max_speed
  std::string codec_;                                     // the channels' codec and rate (one request)
  int sample_rate_ = 0;
  std::vector<std::size_t> early_bytes_;                  // per channel, bytes held in early_
  int opened_ = 0, drained_ = 0;
  bool end_requested_ = false, done_ = false;
  std::string end_reason_;
};

}  // namespace sluice::net::switches
