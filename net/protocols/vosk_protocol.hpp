#pragma once
/// The Vosk server WebSocket protocol (a ws_protocol, net/ws_protocol.hpp), as
/// alphacep/vosk-server's asr_server.py speaks it and Asterisk's res_speech_vosk expects
/// (PROTOCOLS.md): served on its own port (listeners.vosk_port, any path; subprotocol "ws"
/// granted when offered) and on /vosk of the main port.
///   client -> optional, before any audio: {"config": {"sample_rate": 8000, "phrase_list":
///             ["..."], "words": true, "max_alternatives": 0}}; no reply. Without it 8000 Hz.
///             max_alternatives: 0-100 taken (Vosk's own client asks for 20), at most
///             moe::decoder_options::max_alternatives readings served.
///             phrase_list becomes hotwords (sluice boosts, it does not restrict).
///   client -> binary int16 LE PCM; {"eof": 1}; {"reset": 1}
///   server -> lock-step: exactly one reply per binary message and per eof/reset, in order:
///             {"partial": "..."} (the open utterance's newest text), or, when a final has come
///             since the last reply, {"result": [{"conf","start","end","word"}] (s; only with
///             words), "text": "..."}, or with max_alternatives > 0
///             {"alternatives": [{"confidence", "result", "text"}]}: the decoder's n best
///             readings, confidence their share of the probability of the readings kept.
///             reset: every utterance so far finished, their finals in one result; the stream
///             goes on (a new engine channel). eof: the same, then close 1000.
/// Errors: {"error": "...", "code": ...} then a close; it counts as the reply of the message
/// that caused it. One stream is one call (source "vosk", channel "mono").

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "net/ws_protocol.hpp"

namespace sluice::net {

std::unique_ptr<ws_protocol> make_vosk_protocol();

/// What {"config": {...}} sets.
struct vosk_config {
  int sample_rate = 8000;
  std::vector<std::string> phrases;  ///< phrase_list
  bool words = false;
  int max_alternatives = 0;
};

/// Parses a Vosk text message: a config (returned), or eof / reset (`eof` / `reset` set, the
/// config nullopt). errc::corrupt: not a JSON object; errc::invalid_argument: anything else,
/// the message naming the field.
struct vosk_message {
  std::optional<vosk_config> config;
  bool eof = false, reset = false;
};
result<vosk_message> parse_vosk_message(std::string_view text);

}  // namespace sluice::net
