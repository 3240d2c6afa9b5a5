#pragma once
/// The FunASR runtime WebSocket protocol (a ws_protocol, net/ws_protocol.hpp), as FunASR's own
/// clients speak it (see PROTOCOLS.md): served on its own port (listeners.funasr_port, any
/// path) and on /funasr of the main port.
///   client -> {"mode":"online|offline|2pass","wav_name","audio_fs","wav_format":"pcm",
///              "hotwords","itn","is_speaking":true, ...}
///   client -> binary PCM16 LE at audio_fs
///   client -> {"is_speaking": false} (2026 clients add "is_end": true) or {"is_finished": true}
///   server -> {"mode","wav_name","text","is_final","timestamp","stamp_sents"} per result:
///             online modes the text new since the last message of the utterance, offline modes
///             the sentence; after the last final one reply with "is_final": true and
///             "is_end": true (the end-of-input acknowledgement), then close 1000.
/// Errors: {"type":"error","code","reason","text":"","is_final":false} then a close (every
/// FunASR client reads "text"). One stream is one call (source "funasr", channel "mono").

#include <memory>

#include "net/ws_protocol.hpp"

namespace sluice::net {

std::unique_ptr<ws_protocol> make_funasr_protocol();

}  // namespace sluice::net
