// The ITN rules. Each rule looks at the words from one position and either declines or says
// how many words it takes and what to write; the first rule that accepts wins, and the scan goes
// on after the words it took. Rules that need a number say which kind (cardinal, year, ...) and
// get it from number_reader, so one reading of "twenty one" serves money, dates and times alike.

#include "moe/postproc/itn.hpp"

#include <algorithm>
#include <optional>

#include "moe/postproc/number_reader.hpp"

namespace sluice::moe::postproc {

namespace {

constexpr int64_t k_max_day = 31;
constexpr int64_t k_max_hour = 12;
constexpr int64_t k_max_minute = 59;
constexpr int64_t k_min_two_digit = 10;
constexpr int64_t k_minutes_per_hour = 60;
constexpr int64_t k_min_year = 1000;
constexpr int64_t k_max_year = 2999;
constexpr int64_t k_hundred = 100;
constexpr int64_t k_big_scale = 1000000;

struct rule_match {
  std::string text;
  token_kind kind = token_kind::word;
  int words = 0;
};
using maybe = std::optional<rule_match>;

std::string ordinal_suffix(int64_t v) {
  const auto last_two = v % 100;
  if (last_two >= 11 && last_two <= 13) return "th";
  switch (v % 10) {
    case 1: return "st";
    case 2: return "nd";
    case 3: return "rd";
    default: return "th";
  }
}

std::string two_digits(int64_t v) { return (v < 10 ? "0" : "") + std::to_string(v); }

class rules {
 public:
  rules(const itn_grammar& g, std::span<const std::string> w) : g_(g), r_(g, w), w_(w) {}

  maybe at(std::size_t i) const {
    for (auto rule : {&rules::email, &rules::time, &rules::amount, &rules::date, &rules::code_run, &rules::year,
                      &rules::decimal, &rules::ordinal, &rules::cardinal, &rules::month_name})
      if (auto m = (this->*rule)(i)) return m;
    return std::nullopt;
  }

 private:
  std::string grouped(int64_t v) const {
    auto s = std::to_string(v < 0 ? -v : v);
    if ((v < 0 ? -v : v) >= g_.setting("group_separator_min", 10000))
      for (int p = static_cast<int>(s.size()) - 3; p > 0; p -= 3) s.insert(static_cast<std::size_t>(p), ",");
    return (v < 0 ? "-" : "") + s;
  }

  // -- e-mail: piece (sep piece)* at piece (sep piece)+ ------------------------------------
  // A piece is a word, or letters and digits read one by one (joined). Returns the piece's
  // text and words, or nullopt at "at", a separator, or the end.
  std::optional<std::pair<std::string, int>> piece(std::size_t i) const {
    if (i >= w_.size() || g_.match("email_at", w_, i) || g_.match("email_separator", w_, i)) return std::nullopt;
    std::string s;
    std::size_t j = i;
    for (;;) {
      if (g_.has("letters", w_[j]) && w_[j].size() == 1) {
        s += w_[j];
        ++j;
      } else if (auto d = r_.digit_item(j)) {
        s += d->digits;
        j += static_cast<std::size_t>(d->words);
      } else {
        break;
      }
      if (j >= w_.size()) break;
    }
    if (j > i) return std::pair{s, static_cast<int>(j - i)};
    // A word, and the digits read after it ("bob one two three").
    s = w_[i];
    for (j = i + 1; j < w_.size();) {
      const auto d = r_.digit_item(j);
      if (!d) break;
      s += d->digits;
      j += static_cast<std::size_t>(d->words);
    }
    return std::pair{s, static_cast<int>(j - i)};
  }

  maybe email(std::size_t i) const {
    std::string local, domain;
    std::size_t j = i;
    auto pieces = [&](std::string& out, bool need_dot) -> bool {
      bool dot = false;
      for (;;) {
        const auto p = piece(j);
        if (!p) return false;
        out += p->first;
        j += static_cast<std::size_t>(p->second);
        const auto sep = g_.match("email_separator", w_, j);
        if (!sep || !piece(j + static_cast<std::size_t>(sep->words))) break;
        out += sep->value;
        dot = dot || sep->value == ".";
        j += static_cast<std::size_t>(sep->words);
      }
      return !need_dot || dot;
    };
    if (!pieces(local, false)) return std::nullopt;
    const auto at = g_.match("email_at", w_, j);
    if (!at) return std::nullopt;
    j += static_cast<std::size_t>(at->words);
    if (!pieces(domain, true)) return std::nullopt;
    return rule_match{local + at->value + domain, token_kind::email, static_cast<int>(j - i)};
  }

  // -- time of day ------------------------------------------------------------------------
  maybe time(std::size_t i) const {
    // "half past three", "quarter to five"
    if (const auto f = g_.match("time_fraction", w_, i)) {
      const auto rel = g_.match("time_relation", w_, i + 1);
      const auto h = r_.below_100(i + 2);
      if (!rel || !h || h->value < 1 || h->value > k_max_hour) return std::nullopt;
      const auto minutes = std::stoll(f->value);
      int64_t hour = h->value, minute = minutes;
      if (rel->value == "-") {
        hour = hour == 1 ? k_max_hour : hour - 1;
        minute = k_minutes_per_hour - minutes;
      }
      std::size_t j = i + 2 + static_cast<std::size_t>(h->words);
      std::string text = std::to_string(hour) + ":" + two_digits(minute);
      if (const auto s = g_.match("time_suffix", w_, j); s && s->value != ":00") {
        text += " " + s->value;
        j += static_cast<std::size_t>(s->words);
      }
      return rule_match{text, token_kind::time, static_cast<int>(j - i)};
    }
    const auto h = r_.below_100(i);
    if (!h || h->value < 1 || h->value > k_max_hour) return std::nullopt;
    std::size_t j = i + static_cast<std::size_t>(h->words);
    std::string text = std::to_string(h->value);
    bool minutes = false;
    if (g_.match("digit_only", w_, j)) {
      if (const auto u = r_.unit(j + 1); u && *u >= 1 && *u <= 9) {
        text += ":0" + std::to_string(*u);
        j += 2;
        minutes = true;
      }
    } else if (const auto m = r_.below_100(j); m && m->value >= k_min_two_digit && m->value <= k_max_minute) {
      text += ":" + std::to_string(m->value);
      j += static_cast<std::size_t>(m->words);
      minutes = true;
    }
    if (const auto s = g_.match("time_suffix", w_, j)) {
      if (s->value == ":00") {
        if (minutes) return std::nullopt;  // "ten thirty o'clock"
        text += s->value;
      } else {
        text += " " + s->value;
      }
      j += static_cast<std::size_t>(s->words);
      return rule_match{text, token_kind::time, static_cast<int>(j - i)};
    }
    // "at ten thirty": a time only after a word that asks for one.
    if (minutes && i > 0 && g_.has("time_context", w_[i - 1]))
      return rule_match{text, token_kind::time, static_cast<int>(j - i)};
    return std::nullopt;
  }

  // -- money and percentages ----------------------------------------------------------------
  // An amount: [minus] (decimal | cardinal) [million|billion]. Returns its text, the integer
  // value when it has no fraction, and words.
  struct amount_read {
    std::string text;
    std::optional<int64_t> whole;
    int words = 0;
  };
  std::optional<amount_read> number_amount(std::size_t i) const {
    std::string sign;
    std::size_t j = i;
    if (const auto n = g_.match("negative", w_, i)) {
      sign = n->value;
      j += static_cast<std::size_t>(n->words);
    }
    amount_read a;
    if (const auto d = r_.decimal(j)) {
      a.text = sign + d->digits;
      j += static_cast<std::size_t>(d->words);
    } else if (const auto c = r_.cardinal(j)) {
      a.text = sign + grouped(c->value);
      a.whole = sign.empty() ? c->value : -c->value;
      j += static_cast<std::size_t>(c->words);
    } else {
      return std::nullopt;
    }
    if (const auto s = r_.scale(j); s && *s >= k_big_scale) {  // "two point five million"
      a.text += " " + w_[j];
      a.whole.reset();
      ++j;
    }
    a.words = static_cast<int>(j - i);
    return a;
  }

  maybe amount(std::size_t i) const {
    const auto a = number_amount(i);
    if (!a) return std::nullopt;
    std::size_t j = i + static_cast<std::size_t>(a->words);
    if (const auto p = g_.match("percent", w_, j))
      return rule_match{a->text + p->value, token_kind::percent, a->words + p->words};
    if (const auto minor = g_.match("currency_minor", w_, j); minor && a->whole && *a->whole < k_hundred)
      return rule_match{a->text + minor->value, token_kind::money, a->words + minor->words};
    const auto cur = g_.match("currency", w_, j);
    if (!cur) return std::nullopt;
    j += static_cast<std::size_t>(cur->words);
    std::string text = cur->value + a->text;
    // Cents: "[and] ninety nine [cents]", only after a whole amount. Without "cents" the
    // number must be two digits and end the phrase ("forty nine dollars ninety nine").
    if (a->whole) {
      std::size_t k = j;
      const bool joined = r_.is(k, "and");
      if (joined) ++k;
      if (const auto c = r_.below_100(k); c && c->value > 0) {
        const auto after = k + static_cast<std::size_t>(c->words);
        if (const auto minor = g_.match("currency_minor", w_, after)) {
          text += "." + two_digits(c->value);
          j = after + static_cast<std::size_t>(minor->words);
        } else if (!joined && c->value >= k_min_two_digit && !r_.digit_item(after) && !r_.scale(after) &&
                   !r_.unit(after)) {
          text += "." + two_digits(c->value);
          j = after;
        }
      }
    }
    return rule_match{text, token_kind::money, static_cast<int>(j - i)};
  }

  // -- dates ------------------------------------------------------------------------------
  std::optional<std::pair<std::string, int>> year_after(std::size_t j) const {
    if (const auto y = r_.year(j)) return std::pair{std::to_string(y->value), y->words};
    if (const auto c = r_.cardinal(j); c && c->value >= k_min_year && c->value <= k_max_year)
      return std::pair{std::to_string(c->value), c->words};
    return std::nullopt;
  }

  maybe date(std::size_t i) const {
    if (const auto m = g_.match("months", w_, i)) {
      std::size_t j = i + static_cast<std::size_t>(m->words);
      std::string text = m->value;
      if (const auto o = r_.ordinal(j); o && o->value >= 1 && o->value <= k_max_day) {
        text += " " + std::to_string(o->value) + ordinal_suffix(o->value);
        j += static_cast<std::size_t>(o->words);
      } else if (r_.year(j)) {
        // "march twenty twenty four": a year, not a day (tried before the day reading).
      } else if (const auto d = r_.below_100(j); d && d->value >= 1 && d->value <= k_max_day) {
        text += " " + std::to_string(d->value);
        j += static_cast<std::size_t>(d->words);
      }
      const bool has_day = j > i + static_cast<std::size_t>(m->words);
      if (const auto y = year_after(j)) {
        text += (has_day ? ", " : " ") + y->first;
        j += static_cast<std::size_t>(y->second);
      } else if (!has_day) {
        return std::nullopt;
      }
      return rule_match{text, token_kind::date, static_cast<int>(j - i)};
    }
    // "the tenth of march [twenty twenty four]"
    const auto o = r_.ordinal(i);
    if (!o || o->value < 1 || o->value > k_max_day) return std::nullopt;
    std::size_t j = i + static_cast<std::size_t>(o->words);
    const auto of = g_.match("date_of", w_, j);
    if (!of) return std::nullopt;
    const auto m = g_.match("months", w_, j + static_cast<std::size_t>(of->words));
    if (!m) return std::nullopt;
    j += static_cast<std::size_t>(of->words + m->words);
    std::string text = std::to_string(o->value) + ordinal_suffix(o->value) + " " + of->value + " " + m->value;
    if (const auto y = year_after(j)) {
      text += " " + y->first;
      j += static_cast<std::size_t>(y->second);
    }
    return rule_match{text, token_kind::date, static_cast<int>(j - i)};
  }

  // -- digits and letters read one by one ---------------------------------------------------
  std::string format_digits(const std::string& d) const {
    const auto n = static_cast<int64_t>(d.size());
    if (n == g_.setting("phone_short_digits", 7)) return d.substr(0, 3) + "-" + d.substr(3);
    if (n == g_.setting("phone_digits", 10)) return d.substr(0, 3) + "-" + d.substr(3, 3) + "-" + d.substr(6);
    if (n == g_.setting("phone_digits", 10) + 1 && d[0] == '1')
      return "1-" + d.substr(1, 3) + "-" + d.substr(4, 3) + "-" + d.substr(7);
    if (n >= g_.setting("grouped_digits_min", 13)) {
      const auto size = static_cast<std::size_t>(std::max<int64_t>(1, g_.setting("group_size", 4)));
      std::string out;
      for (std::size_t p = 0; p < d.size(); p += size) out += (p ? " " : "") + d.substr(p, size);
      return out;
    }
    return d;
  }

  maybe code_run(std::size_t i) const {
    std::string s;
    std::size_t j = i;
    int items = 0, letters = 0, real_digits = 0;
    bool repeat = false;
    while (j < w_.size()) {
      if (auto d = r_.digit_item(j)) {
        s += d->digits;
        real_digits += g_.match("digit_only", w_, j + static_cast<std::size_t>(d->words) - 1) ? 0 : 1;
        repeat = repeat || d->words > 1;
        j += static_cast<std::size_t>(d->words);
      } else if (w_[j].size() == 1 && g_.has("letters", w_[j])) {
        s += static_cast<char>(w_[j][0] - 'a' + 'A');
        ++letters;
        ++j;
      } else {
        break;
      }
      ++items;
    }
    const auto min_items = g_.setting("code_run_min", 2);
    if (items < min_items && !(repeat && items >= 1)) return std::nullopt;
    if (letters == 0) {
      if (real_digits == 0) return std::nullopt;  // "oh oh" is not a number
      return rule_match{format_digits(s), token_kind::digits, static_cast<int>(j - i)};
    }
    return rule_match{s, token_kind::code, static_cast<int>(j - i)};
  }

  // -- plain numbers ------------------------------------------------------------------------
  maybe year(std::size_t i) const {
    const auto y = r_.year(i);
    if (!y) return std::nullopt;
    return rule_match{std::to_string(y->value), token_kind::year, y->words};
  }

  maybe decimal(std::size_t i) const {
    const auto a = number_amount(i);
    if (!a || a->whole) return std::nullopt;
    return rule_match{a->text, token_kind::decimal, a->words};
  }

  maybe ordinal(std::size_t i) const {
    const auto o = r_.ordinal(i);
    if (!o) return std::nullopt;
    if (o->words == 1 && o->value <= g_.setting("small_number_max", 9)) return std::nullopt;
    return rule_match{grouped(o->value) + ordinal_suffix(o->value), token_kind::ordinal, o->words};
  }

  maybe cardinal(std::size_t i) const {
    const auto a = number_amount(i);
    if (!a || !a->whole) return std::nullopt;
    if (a->words == 1 && *a->whole >= 0 && *a->whole <= g_.setting("small_number_max", 9)) return std::nullopt;
    return rule_match{a->text, token_kind::cardinal, a->words};
  }

  maybe month_name(std::size_t i) const {
    if (g_.has("month_ambiguous", w_[i])) return std::nullopt;
    const auto m = g_.match("months", w_, i);
    if (!m) return std::nullopt;
    return rule_match{m->value, token_kind::word, m->words};
  }

  const itn_grammar& g_;
  number_reader r_;
  std::span<const std::string> w_;
};

}  // namespace

std::vector<written_token> inverse_normalizer::apply(std::span<const spoken_word> words) const {
  std::vector<std::string> text;
  text.reserve(words.size());
  for (const auto& w : words) text.push_back(w.text);
  const rules r(g_, text);
  std::vector<written_token> out;
  std::size_t i = 0;
  while (i < words.size()) {
    auto m = r.at(i);
    if (!m) m = rule_match{words[i].text, token_kind::word, 1};
    const auto n = static_cast<std::size_t>(std::max(1, m->words));
    written_token t;
    t.text = std::move(m->text);
    t.kind = m->kind;
    t.first = static_cast<int>(i);
    t.count = static_cast<int>(n);
    t.start_ms = words[i].start_ms;
    t.end_ms = words[i + n - 1].end_ms;
    t.confidence = words[i].confidence;
    for (std::size_t k = i; k < i + n; ++k) {
      t.spoken += (k > i ? " " : "") + words[k].text;
      t.confidence = std::min(t.confidence, words[k].confidence);
    }
    out.push_back(std::move(t));
    i += n;
  }
  return out;
}

}  // namespace sluice::moe::postproc
