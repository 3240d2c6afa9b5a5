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

  /// `carry` null: this result alone. Otherwise what the stream's earlier finals left open.
  std::vector<std::optional<redaction_kind>> run(bool is_final, const redaction_carry* carry,
                                                 const carry_limits& limits) {
    if (r_.emails)
      for (std::size_t i = 0; i < t_.size(); ++i)
        if (t_[i].kind == token_kind::email) mark(i, redaction_kind::email);
    if (r_.cards) luhn_cards();
    partial_ = !is_final;
    contexts();
    if (carry && limits.finals > 0) carried_context(*carry, limits);
    if (!r_.words.empty()) word_list();
    if (!is_final && r_.cards) unfinished_tail();
    if (is_final && carry && limits.finals > 0 && r_.cards) final_tail();
    return kind_;
  }

  /// The stream's state after this final: `before` aged by one final, reopened by what this
  /// final masked or said, and the digit run it ended with.
  redaction_carry carry_out(const redaction_carry& before, const carry_limits& limits) const {
    redaction_carry after = before;
    if (limits.finals <= 0 || t_.empty()) return limits.finals <= 0 ? redaction_carry{} : before;
    after.finals_left = std::max(0, before.finals_left - 1);
    // The latest trigger (by time) decides the kind: a masked number, or a context word.
    int64_t latest = -1;
    auto reopen = [&](redaction_kind k, int64_t end_ms, bool number) {
      after.open = true;
      after.finals_left = limits.finals;
      after.until_ms = std::max(after.until_ms, end_ms + limits.window_ms);
      if (end_ms >= latest) {
        latest = end_ms;
        after.kind = k;
        after.number_seen = number;
      }
    };
    for (const auto& c : context_seen_) reopen(c.kind, c.end_ms, false);
    for (std::size_t i = 0; i < t_.size(); ++i)
      if (kind_[i] && opens_context(*kind_[i])) reopen(*kind_[i], t_[i].end_ms, true);
    if (after.finals_left == 0) after.open = false;
    // The run of numeric tokens this final ended with. A final that is nothing but a number
    // continuing the last one's adds its digits to it ("four" | "one" | "one" | "one" is a run of
    // four digits by the last piece).
    std::string d;
    const auto s = trailing_run(d, false);
    const bool continues = s == 0 && before.trailing_digits > 0 &&
                           t_.front().start_ms - before.trailing_end_ms <= limits.window_ms;
    after.trailing_digits = s == t_.size() ? 0 : static_cast<int>(std::max<std::size_t>(d.size(), 1));
    if (continues && after.trailing_digits > 0) after.trailing_digits += before.trailing_digits;
    after.trailing_masked = after.trailing_digits > 0 && kind_[t_.size() - 1].has_value();
    after.trailing_kind = after.trailing_masked ? *kind_[t_.size() - 1] : redaction_kind::unfinished_number;
    after.trailing_end_ms = t_.back().end_ms;
    return after;
  }

 private:
  void mark(std::size_t i, redaction_kind k) {
    if (!kind_[i]) kind_[i] = k;
  }

  // Kinds of number whose context goes on into the next finals (not e-mail or a tenant's words).
  static bool opens_context(redaction_kind k) { return k != redaction_kind::email && k != redaction_kind::word; }

  bool enabled(redaction_kind k) const {
    switch (k) {
      case redaction_kind::card:
      case redaction_kind::unfinished_number: return r_.cards;
      case redaction_kind::expiry: return r_.expiry;
      case redaction_kind::cvv: return r_.cvv;
      case redaction_kind::ssn: return r_.ssn;
      case redaction_kind::account: return r_.accounts;
      default: return false;
    }
  }

  // What an earlier final of the stream left open.
  //  - A number that ended the last final goes on at the start of this one: its digits are
  //    masked when the last piece was, or when both pieces together reach partial_digits_min.
  //  - An open context (a context word or a masked number, within limits.finals finals and
  //    limits.window_ms of stream time) covers this final's words up to until_ms as a context
  //    word would: numeric chains from context_digits_min digits, any digits once a number was
  //    masked in it; for an expiry, dates and month names too.
  // What can still leak, by design (what is out cannot be taken back):
  //  - the first pieces of a number read in pieces shorter than partial_digits_min with no
  //    context open ("four one" | "one one ..."): at most partial_digits_min - 1 digits, never a
  //    whole group of four, since the piece that completes four digits is masked;
  //  - a group said as a cardinal or in pairs ("four thousand one hundred eleven", "forty one
  //    eleven") in a final of its own with no context open: numbers said that way are too often
  //    quantities and years to mask every one at the end of a final;
  //  - a group followed by other words in its final ("four one one one okay") with no context
  //    open, and anything past the limits (a number resumed after redact_carry_finals finals or
  //    redact_carry_ms of other speech);
  //  - a context said on another channel (the agent asks, the customer reads): each channel
  //    carries its own; the customer's digit runs are still masked by the rules above.
  void carried_context(const redaction_carry& c, const carry_limits& limits) {
    if (t_.empty()) return;
    const auto min_run = static_cast<std::size_t>(g_.setting("partial_digits_min", 4));
    const auto min_digits = static_cast<std::size_t>(g_.setting("context_digits_min", 3));
    std::string d;
    if (c.trailing_digits > 0 && t_[0].start_ms - c.trailing_end_ms <= limits.window_ms) {
      const auto e = piece_run(0, d);
      const bool goes_on = c.trailing_masked || static_cast<std::size_t>(c.trailing_digits) + d.size() >= min_run;
      const auto k = c.trailing_masked ? c.trailing_kind : redaction_kind::unfinished_number;
      if (e > 0 && goes_on && enabled(k))
        for (std::size_t i = 0; i < e; ++i) mark(i, k);
    }
    if (!c.open || c.finals_left <= 0 || !enabled(c.kind)) return;
    bool masked = c.number_seen;
    for (std::size_t s = 0; s < t_.size() && t_[s].start_ms <= c.until_ms;) {
      const bool month = t_[s].kind == token_kind::word && g_.match("months", spoken_, static_cast<std::size_t>(t_[s].first));
      if (c.kind == redaction_kind::expiry && (t_[s].kind == token_kind::date || month)) {
        mark(s++, c.kind);
        continue;
      }
      // Numeric chains only: a lone digit word here is more often "one moment" than a digit.
      if (!numeric(t_[s])) {
        ++s;
        continue;
      }
      std::size_t e = s;
      d.clear();
      while (e < t_.size() && numeric(t_[e])) d += digits_of(t_[e++]);
      if (d.size() >= (masked ? 1 : min_digits)) {
        for (std::size_t k = s; k < e; ++k) mark(k, c.kind);
        masked = true;
      }
      s = e;
    }
  }

  // A piece of a number as read across utterances: a numeric token, a digit word ITN left as a
  // word because it stood alone ("five", "oh"), or "double"/"triple" (its digit may follow).
  // Appends its digits to `d`. `one_by_one`: numeric tokens only if read digit by digit.
  bool piece(std::size_t i, std::string& d, bool one_by_one = false) const {
    const auto& t = t_[i];
    if (t.kind != token_kind::word) {
      const bool ok = one_by_one ? (t.kind == token_kind::digits || t.kind == token_kind::code) && !digits_of(t).empty()
                                 : numeric(t);
      if (ok) d += digits_of(t);
      return ok;
    }
    if (t.count != 1) return false;
    const auto at = static_cast<std::size_t>(t.first);
    if (g_.match("repeat", spoken_, at)) return true;
    for (const char* table : {"units", "digit_only"}) {
      const auto m = g_.match(table, spoken_, at);
      if (m && m->words == 1 && m->value.size() == 1) {
        d += m->value;
        return true;
      }
    }
    return false;
  }

  // The end of the run of pieces from `s` on (s: none), their digits in `d`.
  std::size_t piece_run(std::size_t s, std::string& d) const {
    while (s < t_.size() && piece(s, d)) ++s;
    return s;
  }

  // A final that ends in a digit run read one by one (digits and spelled codes, not cardinals
  // or years) of partial_digits_min digits or more: it may be the first group of a card number
  // continued in the next utterance, and once shown it cannot be taken back.
  void final_tail() {
    const auto min_digits = static_cast<std::size_t>(g_.setting("partial_digits_min", 4));
    std::string d;
    const auto s = trailing_run(d, true);
    if (d.size() >= min_digits)
      for (std::size_t k = s; k < t_.size(); ++k) mark(k, redaction_kind::unfinished_number);
  }

  // The first token of the number this result ends with (t_.size(): none), its digits in `d`.
  // A "double"/"triple" left at the very end belongs to it: the digit it repeats comes in the
  // next utterance. `one_by_one`: only digits read one by one (digit runs, spelled codes).
  std::size_t trailing_run(std::string& d, bool one_by_one) const {
    std::size_t s = t_.size();
    if (s > 0 && t_[s - 1].kind == token_kind::word && g_.match("repeat", spoken_, static_cast<std::size_t>(t_[s - 1].first)))
      --s;
    std::string piece_digits;
    while (s > 0 && piece(s - 1, piece_digits, one_by_one)) {
      d = piece_digits + d;
      piece_digits.clear();
      --s;
    }
    return s;
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
        context_seen_.push_back({tb.kind, t_[after - 1].end_ms});
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
          std::size_t e = s;
          std::string d;
          // In a partial the number after a context word is still being read: its first digits
          // (ASan's slowness showed "card number is 41" in a partial) are its start, so any
          // piece of it there is masked, digit words ITN left as words and "double"/"triple"
          // included (a partial once ended "card number is four double").
          if (partial_) e = piece_run(s, d);
          else
            while (e < t_.size() && numeric(t_[e])) d += digits_of(t_[e++]);
          if (e == s) {
            ++s;
            continue;
          }
          const bool enough = partial_ || (tb.kind == redaction_kind::ssn ? d.size() == ssn_digits
                                                                           : d.size() >= (masked ? 1 : min_digits));
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

  bool partial_ = false;  // run() on a partial
  const itn_grammar& g_;
  const std::vector<written_token>& t_;
  const redaction_rules& r_;
  std::vector<std::optional<redaction_kind>> kind_;
  std::vector<std::string> spoken_;  // every spoken word, in order
  std::vector<int> token_of_;        // spoken word -> its written token
  struct context_word {
    redaction_kind kind;
    int64_t end_ms;
  };
  std::vector<context_word> context_seen_;  // context words said (of enabled kinds), in order
};

}  // namespace

namespace {

std::vector<redacted_span> spans_of(const std::vector<written_token>& tokens,
                                    const std::vector<std::optional<redaction_kind>>& kinds) {
  std::vector<redacted_span> out;
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

}  // namespace

std::vector<redacted_span> redactor::find(const std::vector<written_token>& tokens, const redaction_rules& rules,
                                          bool is_final) const {
  if (!rules.enabled) return {};
  return spans_of(tokens, finder(g_, tokens, rules).run(is_final, nullptr, {}));
}

std::vector<redacted_span> redactor::find(const std::vector<written_token>& tokens, const redaction_rules& rules,
                                          bool is_final, redaction_carry& carry, const carry_limits& limits) const {
  if (!rules.enabled) return {};
  finder f(g_, tokens, rules);
  auto kinds = f.run(is_final, &carry, limits);
  if (is_final) carry = f.carry_out(carry, limits);
  return spans_of(tokens, kinds);
}

}  // namespace sluice::moe::postproc
