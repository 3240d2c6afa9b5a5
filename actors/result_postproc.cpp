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

// Makes `into` at least as strict for the next final as `other`: the longer trailing digit run
// (masked if either was), and a context open in either (the later end, the more finals).
void widen_carry(moe::postproc::redaction_carry& into, const moe::postproc::redaction_carry& other) {
  if (other.trailing_digits > into.trailing_digits) {
    into.trailing_digits = other.trailing_digits;
    into.trailing_end_ms = std::max(into.trailing_end_ms, other.trailing_end_ms);
    if (other.trailing_masked && !into.trailing_masked) into.trailing_kind = other.trailing_kind;
    into.trailing_masked = into.trailing_masked || other.trailing_masked;
  }
  if (other.open && other.finals_left > 0) {
    if (!into.open) {
      into.open = true;
      into.kind = other.kind;
    }
    into.number_seen = into.number_seen || other.number_seen;
    into.finals_left = std::max(into.finals_left, other.finals_left);
    into.until_ms = std::max(into.until_ms, other.until_ms);
  }
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
  // The final first; its alternatives then from the carry as it stood before it (a copy each).
  const std::optional<moe::postproc::redaction_carry> before = carry ? std::optional(*carry) : std::nullopt;
  const auto r = run_postproc(*res.postproc, opt, ev.text, ev.words, ev.start_ms, ev.end_ms, ev.is_final, carry);
  ev.text = r.lexical_text;
  ev.words = to_events(r.lexical_words);
  ev.display_text = r.display_text;
  ev.display_words = to_events(r.display_words);
  ev.redactions.clear();
  for (const auto& s : r.redactions) ev.redactions.push_back({s.start_ms, s.end_ms, moe::postproc::to_string(s.kind)});
  if (ev.alternatives.empty()) return;
  // Where the final masked something, an alternative's numbers up to the end of the last masked
  // span are masked too, whatever its own rules say: a reading that differs from a masked card
  // number in one digit fails the Luhn check and would otherwise show the other fifteen. As a
  // context opened by a masked number does (redaction_carry), for this one result.
  std::optional<moe::postproc::redaction_carry> masked_context;
  if (!r.redactions.empty()) {
    masked_context = before.value_or(moe::postproc::redaction_carry{});
    masked_context->open = true;
    masked_context->kind = r.redactions.front().kind;
    masked_context->number_seen = true;
    masked_context->finals_left = std::max(masked_context->finals_left, 1);
    for (const auto& s : r.redactions) masked_context->until_ms = std::max(masked_context->until_ms, s.end_ms);
  }
  // The masked context applies even where the stream carries nothing between finals.
  auto alt_opt = opt;
  if (masked_context) alt_opt.carry.finals = std::max(alt_opt.carry.finals, 1);
  std::vector<alternative_event> distinct;
  for (auto& a : ev.alternatives) {
    std::optional<moe::postproc::redaction_carry> mine = masked_context ? masked_context : before;
    const auto ar = run_postproc(*res.postproc, alt_opt, a.text, a.words, ev.start_ms, ev.end_ms, ev.is_final,
                                 mine ? &*mine : nullptr);
    a.text = ar.lexical_text;
    a.words = to_events(ar.lexical_words);
    a.display_text = ar.display_text;
    // What a reading leaves open for the next final counts too (a number it ends with that
    // the final does not), so that the next final's first digits cannot complete it.
    if (carry && mine && ev.is_final && opt.carry.finals > 0) widen_carry(*carry, *mine);
    // Readings that differed only in what is now masked read alike: one entry, shares added.
    const auto same = std::find_if(distinct.begin(), distinct.end(), [&](const alternative_event& d) { return d.text == a.text; });
    if (same == distinct.end()) distinct.push_back(std::move(a));
    else same->confidence = std::min(1.0f, same->confidence + a.confidence);
  }
  ev.alternatives = std::move(distinct);
}

}  // namespace sluice::actors
