#include "net/result_json.hpp"

namespace sluice::net {

namespace {
nlohmann::json words_json(const std::vector<actors::word_event>& ws) {
  auto words = nlohmann::json::array();
  for (const auto& w : ws)
    words.push_back({{"word", w.word}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}, {"confidence", w.confidence}});
  return words;
}
}  // namespace

nlohmann::json result_json(const actors::transcript_event& ev) {
  auto red = nlohmann::json::array();
  for (const auto& r : ev.redactions) red.push_back({{"start_ms", r.start_ms}, {"end_ms", r.end_ms}, {"kind", r.kind}});
  nlohmann::json out = {{"type", ev.is_final ? "final" : "partial"},
                        {"utterance", ev.utterance},
                        {"text", ev.text},
                        {"start_ms", ev.start_ms},
                        {"end_ms", ev.end_ms},
                        {"words", words_json(ev.words)},
                        {"display_text", ev.display_text},
                        {"display_words", words_json(ev.display_words)},
                        {"redactions", red}};
  if (!ev.alternatives.empty()) {
    auto alts = nlohmann::json::array();
    for (const auto& a : ev.alternatives)
      alts.push_back({{"text", a.text},
                      {"display_text", a.display_text},
                      {"confidence", a.confidence},
                      {"words", words_json(a.words)}});
    out["alternatives"] = std::move(alts);
  }
  return out;
}

}  // namespace sluice::net
