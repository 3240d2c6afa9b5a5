#pragma once
/// The JSON of a partial or final result on the sluice WebSocket protocol (PROTOCOLS.md):
///   {"type": "partial"|"final", "utterance", "text", "start_ms", "end_ms", "words": [...],
///    "display_text", "display_words": [...], "redactions": [{"start_ms", "end_ms", "kind"}]}
/// `text`/`words` are the lexical form, `display_*` the display form (moe/postproc); both are
/// already masked where redaction applies. Words are {"word", "start_ms", "end_ms", "confidence"}.
/// A final with alternatives (the stream's ask, else the engine's [decoder] alternatives) also has
/// "alternatives": [{"text",
/// "display_text", "confidence", "words"}], best first (the first is the final's own reading).

#include <nlohmann/json.hpp>

#include "actors/messages.hpp"

namespace sluice::net {

nlohmann::json result_json(const actors::transcript_event& ev);

}  // namespace sluice::net
