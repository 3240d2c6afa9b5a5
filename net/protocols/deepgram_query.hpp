#pragma once
/// The query string of a Deepgram-style live request (`/v1/listen?encoding=linear16&sample_rate=
/// 8000&interim_results=true...`), as Deepgram's SDKs build it (their live client puts every
/// option in the URL; lists repeat the key: `keywords=a&keywords=b`). What sluice does with each
/// option is in deepgram_protocol.hpp. Pure: no sockets, fuzzed with the other parsers.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace sluice::net {

struct deepgram_options {
  std::string encoding;           ///< "linear16" | "mulaw" | "alaw"
  int sample_rate = 0;            ///< Hz
  int channels = 1;               ///< 1 or 2
  bool multichannel = false;      ///< each channel transcribed on its own (needed for 2 channels)
  bool interim_results = false;   ///< partials as Results with is_final false
  bool punctuate = false;         ///< punctuate / smart_format: transcripts in display form
  bool smart_format = false;
  std::vector<std::string> hotwords;  ///< keywords / keyterm, as "phrase" or "phrase weight"
  int alternatives = 1;           ///< readings per final (1 = the best only)
  bool vad_events = false;        ///< SpeechStarted messages
  std::optional<int> utterance_end_ms;  ///< UtteranceEnd messages after finals
  std::string language;           ///< as given ("" when absent)
  bool utterances = false;        ///< pre-recorded: results.utterances, one per segment
};

/// The options of `target` (path and query) of a live stream (`live`) or of a pre-recorded file
/// (POST /v1/listen). errc::invalid_argument naming the parameter for a value sluice cannot
/// serve: an unknown raw `encoding` (live: none either, containers are not streamed; a file
/// without one is a WAV or Ogg Opus file), a raw encoding without or with a bad `sample_rate`
/// ([8000, 48000]), `channels` not 1 or 2 (live: 2 without multichannel=true), a
/// boolean that is not true/false, a language that is not English, `keywords`/`keyterm` beyond
/// the hotword limits or with a bad boost, `alternatives` outside [1, 20] (pre-recorded: above 1),
/// a query that is not
/// valid UTF-8 after percent-decoding. Options sluice has no use for (model, tier, diarize,
/// endpointing, ...) are accepted and ignored, as clients send them by default.
result<deepgram_options> parse_deepgram_query(std::string_view target, bool live = true);

}  // namespace sluice::net
