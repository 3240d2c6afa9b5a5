#include "actors/result_postproc.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

namespace sluice::actors {

std::vector<alternative_event> to_alternative_events(const std::vector<moe::decode_alternative>& alts, int64_t offset_ms) {
  std::vector<alternative_event> out;
  out.reserve(alts.size());
  for (const auto& a : alts) {
    alternative_event e{a.text, a.confidence, {}, {}};
    e.words.reserve(a.words.size());
    for (const auto& w : a.words) e.words.push_back({w.word, w.start_ms + offset_ms, w.end_ms + offset_ms, w.confidence});
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// The postprocessor's result for lexical `words` (or, without word times, `text` split into words
// spanning [start_ms, end_ms]).
moe::postproc::postprocessed run_postproc(const moe::postproc::postprocessor& pp,
                                            const moe::postproc::postproc_options& opt, const std::string& text,
                                            const std::vector<word_event>& ev_words, int64_t start_ms, int64_t end_ms,
                                            bool is_final, moe::postproc::redaction_carry* carry) {
  std::vector<moe::postproc::spoken_word> words;
  words.reserve(ev_words.size());
  for (const auto& w : ev_words) words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
  if (words.empty() && !text.empty()) {
    // A decoder that gave text without word times: the words share the event's span, so the
    // text is still normalised and masked (a card must not slip through for want of times).
    std::istringstream in(text);
    for (std::string w; in >> w;) words.push_back({w, start_ms, end_ms, 1.0f});
  }
  return pp.run(words, opt, is_final, carry);
}

std::vector<word_event> to_events(const std::vector<moe::postproc::output_word>& words) {
  std::vector<word_event> out;
  out.reserve(words.size());
  for (const auto& w : words) out.push_back({w.text, w.start_ms, w.end_ms, w.confidence});
  return out;
}

}  // namespace

void apply_postproc(const engine_resources& res, const moe::postproc::postproc_options& opt, transcript_event& ev,
                    moe::postproc::redaction_carry* carry) {
  if (!ev.error.empty()) return;
  if (!res.postproc) {
    ev.display_text = ev.text;
    ev.display_words = ev.words;
    for (auto& a : ev.alternatives) a.display_text = a.text;
    return;
  }
  // Alternatives first: each from the carry as it stands before this final (a copy each), so
  // a reading that holds a card number is masked as the final would be.
  for (auto& a : ev.alternatives) {
    std::optional<moe::postproc::redaction_carry> mine;
    if (carry) mine = *carry;
    const auto r = run_postproc(*res.postproc, opt, a.text, a.words, ev.start_ms, ev.end_ms, ev.is_final,
                                mine ? &*mine : nullptr);
    a.text = r.lexical_text;
    a.words = to_events(r.lexical_words);
    a.display_text = r.display_text;
  }
  // Readings that differed only in what is now masked read alike: one entry, their shares added.
  std::vector<alternative_event> distinct;
  for (auto& a : ev.alternatives) {
    const auto same = std::find_if(distinct.begin(), distinct.end(), [&](const alternative_event& d) { return d.text == a.text; });
    if (same == distinct.end()) distinct.push_back(std::move(a));
    else same->confidence = std::min(1.0f, same->confidence + a.confidence);
  }
  ev.alternatives = std::move(distinct);
  const auto r = run_postproc(*res.postproc, opt, ev.text, ev.words, ev.start_ms, ev.end_ms, ev.is_final, carry);
  ev.text = r.lexical_text;
  ev.words = to_events(r.lexical_words);
  ev.display_text = r.display_text;
  ev.display_words = to_events(r.display_words);
  ev.redactions.clear();
  for (const auto& s : r.redactions) ev.redactions.push_back({s.start_ms, s.end_ms, moe::postproc::to_string(s.kind)});
}

}  // namespace sluice::actors
