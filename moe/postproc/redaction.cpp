// Redaction works on written tokens, so "four double one ..." and "4111" read as a cardinal are
// both digits by the time it looks: it never has to know how a number was said. Numbers are
// chains of adjacent numeric tokens (a card read in four groups is four tokens); a checksum
// window or a context word decides what a chain is. Context words are matched on the spoken
// words, as the tenant and grammar write them.

#include "moe/postproc/redaction.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

namespace sluice::moe::postproc {

const char* to_string(redaction_kind k) {
  switch (k) {
    case redaction_kind::card: return "card";
    case redaction_kind::expiry: return "expiry";
    case redaction_kind::cvv: return "cvv";
    case redaction_kind::ssn: return "ssn";
    case redaction_kind::account: return "account";
    case redaction_kind::email: return "email";
    case redaction_kind::word: return "word";
    case redaction_kind::unfinished_number: return "unfinished_number";
  }
  return "word";
}

std::string mask_text(redaction_kind k) {
  // An unfinished number is shown as a card: that is what it is masked for.
  return std::string("[") + (k == redaction_kind::unfinished_number ? "card" : to_string(k)) + "]";
}

bool luhn_valid(const std::string& digits) {
  if (digits.empty()) return false;
  int sum = 0;
  bool twice = false;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    int d = *it - '0';
    if (d < 0 || d > 9) return false;
    if (twice) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    twice = !twice;
  }
  return sum % 10 == 0;
}

namespace {

std::string digits_of(const written_token& t) {
  std::string d;
  for (const char c : t.text)
    if (c >= '0' && c <= '9') d += c;
  return d;
}

// Tokens that can be part of a number someone reads out: any written number, and codes with
// digits in them. Money, percentages and times are not (a price is not a card group).
bool numeric(const written_token& t) {
  switch (t.kind) {
    case token_kind::cardinal:
    case token_kind::year:
    case token_kind::digits:
    case token_kind::code:
    case token_kind::ordinal:
      return !digits_of(t).empty();
    default:
      return false;
  }
}

class finder {
 public:
  finder(const itn_grammar& g, const std::vector<written_token>& t, const redaction_rules& r)
      : g_(g), t_(t), r_(r), kind_(t.size()) {
    for (const auto& tok : t) {
      std::istringstream in(tok.spoken);
      for (std::string w; in >> w;) {
        spoken_.push_back(w);
        token_of_.push_back(static_cast<int>(&tok - t.data()));
      }
    }
  }

  std::vector<std::optional<redaction_kind>> run(bool is_final) {
    if (r_.emails)
      for (std::size_t i = 0; i < t_.size(); ++i)
        if (t_[i].kind == token_kind::email) mark(i, redaction_kind::email);
    if (r_.cards) luhn_cards();
    contexts();
    if (!r_.words.empty()) word_list();
    if (!is_final && r_.cards) unfinished_tail();
    return kind_;
  }

 private:
  void mark(std::size_t i, redaction_kind k) {
    if (!kind_[i]) kind_[i] = k;
  }

  // Every window of adjacent numeric tokens with card_digits_min..max digits that passes Luhn.
  void luhn_cards() {
    const auto lo = static_cast<std::size_t>(g_.setting("card_digits_min", 13));
    const auto hi = static_cast<std::size_t>(g_.setting("card_digits_max", 19));
    for (std::size_t s = 0; s < t_.size(); ++s) {
      std::string d;
      for (std::size_t e = s; e < t_.size() && numeric(t_[e]); ++e) {
        d += digits_of(t_[e]);
        if (d.size() > hi) break;
        if (d.size() >= lo && luhn_valid(d))
          for (std::size_t k = s; k <= e; ++k) mark(k, redaction_kind::card);
      }
    }
  }

  // After a context word: numeric chains (cards, accounts, CVV, SSN) or, for expiry, numbers and
  // month names, within redact_context_words tokens.
  void contexts() {
    const auto window = static_cast<std::size_t>(g_.setting("redact_context_words", 8));
    const auto min_digits = static_cast<std::size_t>(g_.setting("context_digits_min", 3));
    const auto ssn_digits = static_cast<std::size_t>(g_.setting("ssn_digits", 9));
    struct table {
      const char* name;
      redaction_kind kind;
      bool on;
    };
    // The narrower kinds first: "the card expires oh four twenty six" is an expiry date.
    const table tables[] = {{"redact_expiry_context", redaction_kind::expiry, r_.expiry},
                            {"redact_cvv_context", redaction_kind::cvv, r_.cvv},
                            {"redact_ssn_context", redaction_kind::ssn, r_.ssn},
                            {"redact_account_context", redaction_kind::account, r_.accounts},
                            {"redact_card_context", redaction_kind::card, r_.cards}};
    for (const auto& tb : tables) {
      if (!tb.on) continue;
      for (std::size_t w = 0; w < spoken_.size(); ++w) {
        const auto m = g_.match(tb.name, spoken_, w);
        if (!m) continue;
        const auto after = static_cast<std::size_t>(token_of_[w + static_cast<std::size_t>(m->words) - 1]) + 1;
        const auto end = std::min(t_.size(), after + window);
        if (tb.kind == redaction_kind::expiry) {
          for (std::size_t i = after; i < end; ++i) {
            const bool month = t_[i].kind == token_kind::word && g_.match("months", spoken_, static_cast<std::size_t>(t_[i].first));
            if (numeric(t_[i]) || t_[i].kind == token_kind::date || month) mark(i, tb.kind);
          }
          continue;
        }
        // Numeric chains in the window; each masked chain extends the window past it, so a
        // number broken up by a misheard word ("four one one one won one one ...") stays masked.
        // After the first, any digits count: a fragment of a broken-up number is still part of it.
        std::size_t end_at = std::min(t_.size(), after + window);
        bool masked = false;
        for (std::size_t s = after; s < end_at;) {
          if (!numeric(t_[s])) {
            ++s;
            continue;
          }
          std::size_t e = s;
          std::string d;
          while (e < t_.size() && numeric(t_[e])) d += digits_of(t_[e++]);
          const bool enough = tb.kind == redaction_kind::ssn ? d.size() == ssn_digits
                                                              : d.size() >= (masked ? 1 : min_digits);
          if (enough) {
            for (std::size_t k = s; k < e; ++k) mark(k, tb.kind);
            end_at = std::min(t_.size(), e + window);
            masked = true;
          }
          s = e;
        }
      }
    }
  }

  void word_list() {
    for (const auto& phrase : r_.words) {
      std::vector<std::string> p;
      std::istringstream in(phrase);
      for (std::string w; in >> w;) p.push_back(w);
      if (p.empty()) continue;
      for (std::size_t w = 0; w + p.size() <= spoken_.size(); ++w)
        if (std::equal(p.begin(), p.end(), spoken_.begin() + static_cast<std::ptrdiff_t>(w)))
          for (std::size_t k = w; k < w + p.size(); ++k) mark(static_cast<std::size_t>(token_of_[k]), redaction_kind::word);
    }
  }

  void unfinished_tail() {
    const auto min_digits = static_cast<std::size_t>(g_.setting("partial_digits_min", 4));
    std::size_t s = t_.size();
    std::string d;
    while (s > 0 && numeric(t_[s - 1])) d += digits_of(t_[--s]);
    if (d.size() >= min_digits)
      for (std::size_t k = s; k < t_.size(); ++k) mark(k, redaction_kind::unfinished_number);
  }

  const itn_grammar& g_;
  const std::vector<written_token>& t_;
  const redaction_rules& r_;
  std::vector<std::optional<redaction_kind>> kind_;
  std::vector<std::string> spoken_;  // every spoken word, in order
  std::vector<int> token_of_;        // spoken word -> its written token
};

}  // namespace

std::vector<redacted_span> redactor::find(const std::vector<written_token>& tokens, const redaction_rules& rules,
                                          bool is_final) const {
  std::vector<redacted_span> out;
  if (!rules.enabled) return out;
  const auto kinds = finder(g_, tokens, rules).run(is_final);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!kinds[i]) continue;
    if (!out.empty() && out.back().kind == *kinds[i] &&
        out.back().first_token + out.back().tokens == static_cast<int>(i)) {
      out.back().tokens += 1;
      out.back().end_ms = tokens[i].end_ms;
      continue;
    }
    out.push_back({tokens[i].start_ms, tokens[i].end_ms, *kinds[i], static_cast<int>(i), 1});
  }
  return out;
}

}  // namespace sluice::moe::postproc
