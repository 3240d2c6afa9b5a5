#include "moe/postproc/postprocessor.hpp"

#include <algorithm>

namespace sluice::moe::postproc {

namespace {

std::string capitalized(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

std::string joined(const std::vector<output_word>& w) {
  std::string out;
  for (const auto& x : w) out += (out.empty() ? "" : " ") + x.text;
  return out;
}

// Written tokens whose text must keep its case whatever the sentence says.
bool keeps_case(token_kind k) { return k == token_kind::email; }

}  // namespace

postprocessor::postprocessor(std::shared_ptr<const itn_grammar> grammar, std::shared_ptr<const punctuation_hook> punct)
    : grammar_(std::move(grammar)), punct_(std::move(punct)) {
  if (!punct_) punct_ = std::make_shared<rule_punctuation>();
}

postprocessed postprocessor::run(std::span<const spoken_word> words, const postproc_options& opt,
                                 bool is_final, redaction_carry* carry) const {
  postprocessed out;
  // Redaction always reads the written tokens (a card is digits whichever way it was said), so
  // ITN runs even when the display form keeps the spoken words.
  const auto tokens = inverse_normalizer(*grammar_).apply(words);
  out.redactions = carry ? redactor(*grammar_).find(tokens, opt.redact, is_final, *carry, opt.carry)
                         : redactor(*grammar_).find(tokens, opt.redact, is_final);

  // Which span (if any) each written token belongs to.
  std::vector<int> span_of(tokens.size(), -1);
  for (std::size_t s = 0; s < out.redactions.size(); ++s)
    for (int k = 0; k < out.redactions[s].tokens; ++k)
      span_of[static_cast<std::size_t>(out.redactions[s].first_token + k)] = static_cast<int>(s);

  std::vector<punct_decision> marks(words.size());
  if (opt.punctuate) {
    std::vector<std::string> spoken;
    spoken.reserve(words.size());
    for (const auto& w : words) spoken.push_back(w.text);
    auto d = punct_->punctuate(spoken, is_final);
    if (d.size() != words.size()) d = rule_punctuation().punctuate(spoken, is_final);
    marks = std::move(d);
  }

  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto& t = tokens[i];
    const auto& first = marks[static_cast<std::size_t>(t.first)];
    const auto s = span_of[i];
    if (s >= 0) {
      const auto& span = out.redactions[static_cast<std::size_t>(s)];
      if (span.first_token != static_cast<int>(i)) continue;
      const auto& last_tok = tokens[static_cast<std::size_t>(span.first_token + span.tokens - 1)];
      const auto& last = marks[static_cast<std::size_t>(last_tok.first + last_tok.count - 1)];
      const auto mask = mask_text(span.kind);
      out.display_words.push_back({mask + to_string(last.mark), span.start_ms, span.end_ms, t.confidence});
      out.lexical_words.push_back({mask, span.start_ms, span.end_ms, t.confidence});
      continue;
    }
    const auto& last = marks[static_cast<std::size_t>(t.first + t.count - 1)];
    if (opt.itn) {
      auto text = first.capitalize && !keeps_case(t.kind) ? capitalized(t.text) : t.text;
      out.display_words.push_back({text + to_string(last.mark), t.start_ms, t.end_ms, t.confidence});
    }
    for (int k = 0; k < t.count; ++k) {
      const auto idx = static_cast<std::size_t>(t.first + k);
      const auto& w = words[idx];
      out.lexical_words.push_back({w.text, w.start_ms, w.end_ms, w.confidence});
      if (!opt.itn)
        out.display_words.push_back({(marks[idx].capitalize ? capitalized(w.text) : w.text) + to_string(marks[idx].mark),
                                     w.start_ms, w.end_ms, w.confidence});
    }
  }
  out.display_text = joined(out.display_words);
  out.lexical_text = joined(out.lexical_words);
  return out;
}

}  // namespace sluice::moe::postproc
