#pragma once
/// Deepgram's pre-recorded API on `POST /v1/listen` (what Deepgram's SDKs' transcribeFile sends:
/// the file as the body, options in the query, `Authorization: Token <key>`): the file goes to
/// the upload queue like `POST /v1/transcribe`, and its transcript document (actors/file_job.cpp)
/// is answered in Deepgram's response shape:
///   {"metadata": {"request_id" (the upload's call id), "sha256" (of the body), "created",
///                 "duration", "channels", "models", "model_info", "warnings"?},
///    "results": {"channels": [{"alternatives": [{"transcript", "confidence",
///                 "words": [{"word", "start", "end", "confidence", "punctuated_word"}]}]}],
///                "utterances"?: [{"id", "start", "end", "channel", "confidence", "transcript", "words"}]}}
/// One entry of results.channels per audio channel with multichannel=true (or a mono file);
/// otherwise one: every channel's words in time order, its transcript those words (sluice
/// transcribes each channel on its own and merges the words, where Deepgram would mix the
/// audio; metadata.channels and every utterance's channel then count that one). punctuate / smart_format:
/// display-form transcripts; utterances=true: one utterance per segment of any channel;
/// keywords / keyterm: hotwords of every channel; alternatives above 1 are refused (live only).
/// A URL source (a JSON body) is refused: sluice fetches nothing.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "net/protocols/deepgram_query.hpp"

namespace sluice::net {

struct deepgram_request_info {
  std::string request_id;
  std::string sha256;   ///< hex, of the request body
  std::string created;  ///< ISO 8601 UTC (calls::iso_utc)
};

/// Deepgram's response for an upload's transcript document `doc` ({"duration_s", "channels":
/// [{"channel", "segments": [{"start_ms", "end_ms", "text", "words", "display_text",
/// "display_words"}]}], "errors"?}). Fields it lacks count as empty.
nlohmann::json deepgram_prerecorded(const nlohmann::json& doc, const deepgram_options& o,
                                    const deepgram_request_info& info);

/// Deepgram's error body: {"err_code", "err_msg", "request_id"}.
nlohmann::json deepgram_error(int status, const std::string& message, const std::string& request_id);

/// SHA-256 of `bytes`, lowercase hex ("" if OpenSSL fails).
std::string sha256_hex(std::string_view bytes);

/// The model both Deepgram APIs name in their metadata ("models", "model_info", "model_uuid").
inline constexpr const char* deepgram_model_name = "sluice-default";
/// {"name", "version", "arch"} of that model.
nlohmann::json deepgram_model_info();

}  // namespace sluice::net
