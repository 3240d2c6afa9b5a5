#pragma once
/// The WebSocket protocols that switches speak (mod_audio_fork and jambonz `listen`, jambonz's
/// custom speech-to-text API, Twilio Media Streams, Genesys AudioHook), each as a pure state
/// machine: it reads the switch's messages and says what the session must do (a switch_step),
/// and it words the call's results in the protocol's own messages. No sockets, no actors: the
/// session (net/switches/switch_ws_session.hpp) carries the steps out, and unit tests drive
/// the machines alone.
///
/// Contract of a step: `open` comes at most once and before any `audio`; `audio` is per call
/// channel (an index into open->start.channel_labels), in the codec and rate of `open`;
/// `end` says no more audio comes (the call ends with that reason once its finals are in);
/// `error` means the switch broke the protocol: the session sends `replies`, then the error's
/// own text frame (when not empty), then closes with its code; the call, if open, ends with
/// "error: <reason>" (the audio already received is still transcribed).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/messages.hpp"
#include "net/calls/call_registry.hpp"

namespace sluice::net::switches {

/// WebSocket close codes the machines choose from (RFC 6455 7.4.1).
enum class close_code : uint16_t { normal = 1000, unsupported = 1003, policy = 1008, too_big = 1009, internal = 1011 };

/// The call to open, once the switch has said what it is.
struct call_plan {
  calls::call_start start;        ///< source, external id, labels, metadata (tenant: the session's)
  std::string codec = "pcm_s16le";  ///< actors::channel_request::codec of every channel
  int sample_rate = 8000;         ///< Hz
};

struct channel_audio {
  int channel = 0;
  std::vector<uint8_t> bytes;
};

struct switch_error {
  close_code code = close_code::policy;
  std::string reason;  ///< for the logs, the close frame and the call's end reason
  std::string reply;   ///< the protocol's own error message (a text frame); may be empty
};

struct switch_step {
  std::optional<call_plan> open;
  std::vector<channel_audio> audio;
  std::vector<calls::call_event> events;
  std::optional<nlohmann::json> metadata;  ///< merged into the call's metadata
  std::vector<std::string> replies;        ///< text frames to the switch, in order
  std::optional<std::string> end;          ///< the end reason
  std::optional<switch_error> error;
};

/// What happens once the call's finals are in after `end`.
struct drained_step {
  std::vector<std::string> replies;  ///< the last text frames
  bool close = true;                 ///< the server closes (1000); false: it waits for the switch to close
};

class switch_protocol {
 public:
  virtual ~switch_protocol() = default;
  /// The registry's source name ("audio_fork", "jambonz", "jambonz_stt", "twilio", "audiohook").
  virtual std::string_view source() const = 0;
  virtual switch_step on_text(std::string_view text) = 0;
  virtual switch_step on_binary(std::span<const uint8_t> bytes) = 0;
  /// The text frames (possibly none) that carry a partial or final of channel `index` back.
  virtual std::vector<std::string> on_result(int index, const actors::transcript_event& ev) = 0;
  virtual drained_step on_drained() = 0;
};

/// A step that refuses with `reason` (and the protocol's own error text frame `reply`).
inline switch_step refuse(close_code code, std::string reason, std::string reply = {}) {
  switch_step s;
  s.error = switch_error{code, std::move(reason), std::move(reply)};
  return s;
}

}  // namespace sluice::net::switches
