#include "actors/result_postproc.hpp"

#include <sstream>

namespace sluice::actors {

void apply_postproc(const engine_resources& res, const moe::postproc::postproc_options& opt, transcript_event& ev,
                    moe::postproc::redaction_carry* carry) {
  if (!ev.error.empty()) return;
  if (!res.postproc) {
    ev.display_text = ev.text;
    ev.display_words = ev.words;
    return;
  }
  std::vector<moe::postproc::spoken_word> words;
  words.reserve(ev.words.size());
  for (const auto& w : ev.words) words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
  if (words.empty() && !ev.text.empty()) {
    // A decoder that gave text without word times: the words share the event's span, so the
    // text is still normalised and masked (a card must not slip through for want of times).
    std::istringstream in(ev.text);
    for (std::string w; in >> w;) words.push_back({w, ev.start_ms, ev.end_ms, 1.0f});
  }
  const auto r = res.postproc->run(words, opt, ev.is_final, carry);
  ev.text = r.lexical_text;
  ev.words.clear();
  for (const auto& w : r.lexical_words) ev.words.push_back({w.text, w.start_ms, w.end_ms, w.confidence});
  ev.display_text = r.display_text;
  ev.display_words.clear();
  for (const auto& w : r.display_words) ev.display_words.push_back({w.text, w.start_ms, w.end_ms, w.confidence});
  ev.redactions.clear();
  for (const auto& s : r.redactions) ev.redactions.push_back({s.start_ms, s.end_ms, moe::postproc::to_string(s.kind)});
}

}  // namespace sluice::actors
