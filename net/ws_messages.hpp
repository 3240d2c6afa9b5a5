#pragma once
/// The client text messages of the WebSocket protocols (ws_session.hpp), parsed into plain
/// structs by pure functions: no sockets, no actors, nothing thrown, so they can be unit
/// tested and fuzzed (any byte string in, a value or an error out).
///
/// Errors: errc::corrupt when the text is not a JSON object (the session answers "bad_json",
/// close 1008); errc::invalid_argument when a field has the wrong type, is out of range or
/// names something not offered (the message names the field and what it allows; the session
/// answers "bad_request", close 1003, for a start message and "protocol", close 1008, later).

#include <cstddef>
#include <string>
#include <string_view>

#include "actors/messages.hpp"
#include "config/error.hpp"

namespace sluice::net {

/// Bounds on what a start message may carry (bytes are UTF-8 bytes).
inline constexpr std::size_t max_hotwords = 256;
inline constexpr std::size_t max_hotword_bytes = 256;
inline constexpr std::size_t max_funasr_hotwords_bytes = max_hotwords * (max_hotword_bytes + 8);
inline constexpr std::size_t max_name_bytes = 256;  ///< wav_name, encoding, mode, wav_format
inline constexpr std::size_t max_tenant_bytes = 64;  ///< as auth::valid_tenant

/// FunASR hotword weights (about 10..30) in ln units per token, as the decoder takes them.
inline constexpr double funasr_weight_scale = 0.1;

/// sluice: {"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1,
/// "hotwords":["acme 4", {"phrase":"acme","weight":4}],"partials":true,"tenant":"billing",
/// "alternatives":3}; every field but "type" is optional (16000 Hz, pcm_s16le, 1 channel, no
/// hotwords, partials on, no tenant, the engine's [decoder] alternatives). "alternatives" (0 to
/// moe::decoder_options::max_alternatives): how many readings each final lists. "tenant" names whose rules (hotwords, redaction) the stream uses; it counts
/// only on a server without keys: with keys the stream always belongs to its key's tenant.
result<actors::channel_request> parse_sluice_start(std::string_view text);

/// What a FunASR start message asks for.
struct funasr_start {
  actors::channel_request request;  ///< codec pcm_s16le; partials unless mode is offline
  std::string mode = "2pass";       ///< online | offline | 2pass
  std::string wav_name = "sluice";  ///< echoed in every reply
  bool end_requested = false;       ///< the start message already says is_speaking: false
  bool itn = true;                  ///< "itn": finals carry the display form (FunASR's default: on)
};

/// FunASR: {"mode":"2pass","wav_name":"w","audio_fs":16000,"wav_format":"pcm" (any case),
/// "hotwords":...,"itn":true,"is_speaking":true, ...}; fields this server does not use
/// (chunk_size, chunk_interval, ...) are ignored. "hotwords" is a string in one of the forms
/// FunASR's clients send: a JSON object with weights ("{\"acme\":20}"), a comma or newline
/// list ("acme,refund desk"), or space-separated words ("acme refund").
result<funasr_start> parse_funasr_start(std::string_view text);

/// A sluice text message after the start: success for {"type":"end"}; an error otherwise.
result<void> parse_sluice_end(std::string_view text);

/// A FunASR text message after the start: success for the end of input, {"is_speaking": false}
/// (with or without "is_end": true) or {"is_finished": true}; an error otherwise.
result<void> parse_funasr_end(std::string_view text);

}  // namespace sluice::net
