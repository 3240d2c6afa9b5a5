#pragma once
/// The seam between a WebSocket transport (net/ws_session.cpp: Beast reads and a write queue,
/// idle and session timers, close handling, half-close, TLS) and one wire protocol spoken over
/// it (sluice /v1/stream, FunASR, sherpa-onnx, Vosk, a switch's audio fork, ...).
///
/// The transport owns the socket and the engine channels; a protocol adapter (ws_protocol)
/// owns the protocol's state: it parses what the client sends, asks the transport to open
/// engine channels and feed them, and turns the engine's results into the protocol's replies.
///
/// Threading: every ws_protocol member is called on the session's strand, one at a time, and
/// every ws_transport member may only be called from inside those calls (on that strand). The
/// transport reference passed to a call is valid for that call only: do not keep it.
///
/// Life of a session:
///   accept_subprotocol (before the handshake) -> on_start -> on_text / on_binary ... ->
///   the adapter opens channels (open_channels) -> on_open(i) for each, then audio goes in
///   (push_audio / push_samples) and on_event(i) for each partial/final -> end_channel(i) ->
///   on_drained(i) once channel i has delivered its last final -> the adapter closes.
/// A client that leaves (close frame, reset, failed write) ends the session at once: its
/// channels are aborted and no adapter member is called any more.
///
/// Calls: a session that opens channels is one call in the registry (net/calls): the adapter
/// calls begin_call() with its source, labels and metadata (the transport adds the tenant);
/// the transport then records every event of every channel (result()) and ends the call when
/// the session ends (reason "done" after a normal close, "client left", or "error: ...").

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/messages.hpp"
#include "net/calls/call_registry.hpp"

namespace sluice::net {

struct server_state;

/// WebSocket close codes the transport sends (RFC 6455 section 7.4.1).
enum class ws_close : uint16_t {
  normal = 1000,          ///< done
  going_away = 1001,      ///< idle, or the session outlived server.max_session_s
  unsupported = 1003,     ///< a bad start message or audio the server cannot take
  policy = 1008,          ///< protocol violation (wrong order, malformed JSON, unknown message)
  too_big = 1009,         ///< a message larger than server.max_message_bytes
  internal = 1011,        ///< the server failed
  try_later = 1013,       ///< the engine is full
};

/// What an adapter may ask of its transport. Every member runs on the session strand.
class ws_transport {
 public:
  virtual ~ws_transport() = default;

  /// Queues a text / binary message (sent in order; nothing is sent after a close was asked).
  virtual void send_text(std::string text) = 0;
  virtual void send_binary(std::vector<uint8_t> bytes) = 0;

  /// Opens one engine channel per request; the first gets index channel_count() (0 on the first
  /// call), the next one more, and so on (a protocol may open more later: Vosk's reset ends a
  /// channel and opens the next). The tenant of each request is set by the transport.
  /// `call_channels[k]` is the call channel (index into call_start.channel_labels) whose
  /// results requests[k] records; empty: the engine channel's own index. For each channel that
  /// opens, on_open(i) follows; if any fails, the session fails (error code "overloaded",
  /// close 1013, when the engine is full or draining; "bad_request", close 1003, otherwise)
  /// and the adapter hears nothing more.
  virtual void open_channels(std::vector<actors::channel_request> requests, std::vector<int> call_channels = {}) = 0;
  /// How many channels open_channels has asked for in all (0 before).
  virtual std::size_t channel_count() const = 0;
  /// Audio for channel i in its request's codec (bytes) or as f32 samples (codec "f32"). Audio
  /// pushed before the channel is open is held and sent when it opens; audio after
  /// end_channel(i) is dropped.
  virtual void push_audio(std::size_t i, std::vector<uint8_t> bytes) = 0;
  virtual void push_samples(std::size_t i, std::vector<float> samples) = 0;
  /// No more audio for channel i: it finishes its utterances, then on_drained(i).
  virtual void end_channel(std::size_t i) = 0;

  /// The client has said its last word (its end-of-input message): from now on it is not idle
  /// while it waits, may half-close its sending side, and any further message is not read as
  /// protocol (the socket is only watched for its close or departure).
  virtual void input_done() = 0;

  /// Sends the queued messages, then a close frame with `code` and `reason` (a short text);
  /// channels not drained yet are aborted.
  virtual void close(ws_close code, std::string_view reason) = 0;
  /// An error for the client: the adapter's error_message(code, reason) when it gives one,
  /// then close(close_code, code). Logged at info with the session id.
  virtual void fail(std::string_view code, std::string_view reason, ws_close close_code) = 0;

  /// Registers this session as a call; `start.tenant` is filled in by the transport. Once per
  /// session (later calls are ignored).
  virtual void begin_call(calls::call_start start) = 0;
  /// A non-speech event of the call (DTMF, metadata, ...); ignored before begin_call.
  virtual void call_event(calls::call_event ev) = 0;
  /// The call's id (empty before begin_call).
  virtual const calls::call_id& call() const = 0;

  /// The session's id (in every log line about it) and what the server shares (its config).
  virtual uint64_t id() const = 0;
  virtual const server_state& server() const = 0;
  /// The tenant the gate admitted (empty without keys).
  virtual const std::string& tenant() const = 0;
};

/// Whether a Sec-WebSocket-Protocol header (a comma list) offers `name`, exactly.
inline bool offers_subprotocol(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    auto token = header.substr(0, comma);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (token == name) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

/// One wire protocol over a WebSocket. See the file comment for the order of calls.
class ws_protocol {
 public:
  virtual ~ws_protocol() = default;

  /// The source name of its calls ("stream", "funasr", "sherpa", "vosk", ...), for logs too.
  virtual std::string_view name() const = 0;
  /// The subprotocol to grant, given the client's Sec-WebSocket-Protocol header (comma list);
  /// empty: none.
  virtual std::string accept_subprotocol(std::string_view offered) const {
    (void)offered;
    return {};
  }
  /// After the handshake, before the first message (for protocols where the server speaks first).
  virtual void on_start(ws_transport& t) { (void)t; }

  /// One complete client message.
  virtual void on_text(ws_transport& t, std::string_view text) = 0;
  virtual void on_binary(ws_transport& t, std::vector<uint8_t> bytes) = 0;

  /// Channel i opened (reply.ok is always true here; failures fail the session, see open_channels).
  virtual void on_open(ws_transport& t, std::size_t i, const actors::open_reply& reply) = 0;
  /// A partial or final of channel i, or an error (ev.error non-empty: utterance < 0 means the
  /// audio could not be decoded, otherwise that utterance was lost; the channel goes on).
  virtual void on_event(ws_transport& t, std::size_t i, const actors::transcript_event& ev) = 0;
  /// Channel i delivered its last final after end_channel(i).
  virtual void on_drained(ws_transport& t, std::size_t i) = 0;
  /// Channel i has handled the first `taken` audio messages pushed to it (push_audio /
  /// push_samples, in order, early ones included; audio dropped by the transport is not
  /// counted), and, when `caught_up`, the recognizer has made all it can of them: the partials
  /// and finals of that audio have been given to on_event, and what is left needs more audio
  /// (actors/channel_progress.hpp). Reports come at least after each message that leaves the
  /// channel's mailbox empty and whenever the recognizer catches up. The default ignores them.
  virtual void on_progress(ws_transport& t, std::size_t i, uint64_t taken, bool caught_up) {
    (void)t;
    (void)i;
    (void)taken;
    (void)caught_up;
  }

  /// The message an error sends before its close (see ws_transport::fail); nullopt: none.
  virtual std::optional<std::string> error_message(std::string_view code, std::string_view reason) const = 0;

  /// The session outlived server.max_session_s: end the input as the client's end would. The
  /// default ends every channel (or closes 1000 when none was opened).
  virtual void on_session_limit(ws_transport& t) {
    t.input_done();
    if (t.channel_count() == 0) return t.close(ws_close::normal, "no stream");
    for (std::size_t i = 0; i < t.channel_count(); ++i) t.end_channel(i);
  }
};

}  // namespace sluice::net
