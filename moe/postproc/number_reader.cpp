#include "moe/postproc/number_reader.hpp"

#include <charconv>

namespace sluice::moe::postproc {

namespace {
constexpr int64_t k_hundred = 100;
constexpr int64_t k_thousand = 1000;
constexpr int64_t k_ten = 10;
constexpr int64_t k_max_digit = 9;
}  // namespace

std::optional<int64_t> number_reader::value_of(std::string_view table, std::size_t at) const {
  if (at >= w_.size()) return std::nullopt;
  // One-word keys only: number words are single words.
  const auto m = g_.match(table, w_, at);
  if (!m || m->words != 1) return std::nullopt;
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(m->value.data(), m->value.data() + m->value.size(), v);
  if (ec != std::errc{} || p != m->value.data() + m->value.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> number_reader::unit(std::size_t at) const { return value_of("units", at); }
std::optional<int64_t> number_reader::scale(std::size_t at) const { return value_of("scales", at); }

std::optional<read_number> number_reader::below_100(std::size_t at) const {
  if (const auto t = value_of("tens", at)) {
    if (const auto u = unit(at + 1); u && *u >= 1 && *u <= k_max_digit) return read_number{*t + *u, 2};
    return read_number{*t, 1};
  }
  if (const auto u = unit(at)) return read_number{*u, 1};
  return std::nullopt;
}

std::optional<read_number> number_reader::below_1000(std::size_t at) const {
  int64_t head = 0;
  if (const auto u = unit(at); u && *u >= 1) {
    head = *u;
  } else if (value_of("scale_one", at)) {
    head = 1;
  }
  if (head > 0 && scale(at + 1) == k_hundred) {
    read_number r{head * k_hundred, 2};
    std::size_t j = at + 2;
    // "one hundred and five": "and" belongs to the number only when a number follows it.
    if (is(j, "and") && below_100(j + 1)) ++j;
    if (const auto rest = below_100(j); rest && rest->value > 0) {
      r.value += rest->value;
      r.words = static_cast<int>(j - at) + rest->words;
    }
    return r;
  }
  if (value_of("scale_one", at) && !unit(at)) return std::nullopt;
  return below_100(at);
}

std::optional<read_number> number_reader::cardinal(std::size_t at) const {
  int64_t total = 0;
  std::size_t j = at;
  int64_t last_scale = INT64_MAX;
  bool any = false;
  while (j < w_.size()) {
    auto chunk = below_1000(j);
    std::size_t k = 0;
    if (chunk) {
      k = j + static_cast<std::size_t>(chunk->words);
    } else if (value_of("scale_one", j) && scale(j + 1).value_or(0) >= k_thousand) {
      chunk = read_number{1, 1};  // "a thousand"
      k = j + 1;
    } else {
      break;
    }
    const auto s = scale(k);
    if (s && *s >= k_thousand && *s < last_scale && chunk->value > 0) {
      total += chunk->value * *s;
      last_scale = *s;
      j = k + 1;
      any = true;
      if (is(j, "and") && below_100(j + 1) && !scale(j + 2)) ++j;  // "two thousand and five"
      continue;
    }
    // A bare chunk after a scale must be smaller than that scale ("thousand two" is fine,
    // "thousand two thousand" was handled above).
    total += chunk->value;
    j = k;
    any = true;
    break;
  }
  if (!any) return std::nullopt;
  // "and" consumed with nothing after it never happens: it is taken only before a number.
  return read_number{total, static_cast<int>(j - at)};
}

std::optional<read_number> number_reader::ordinal(std::size_t at) const {
  if (const auto o = value_of("ordinals", at)) return read_number{*o, 1};
  const auto c = cardinal(at);
  if (!c) return std::nullopt;
  auto k = at + static_cast<std::size_t>(c->words);
  const bool joined = is(k, "and") && c->value >= k_hundred;  // "one hundred and second"
  if (joined) ++k;
  const auto o = value_of("ordinals", k);
  if (!o) return std::nullopt;
  const int words = static_cast<int>(k - at) + 1;
  if (*o >= k_hundred) return joined ? std::nullopt : std::optional(read_number{c->value * *o, words});  // "two hundredth"
  // "twenty first": the cardinal must leave room for the ordinal's digits.
  const int64_t room = *o < k_ten ? k_ten : k_hundred;
  if (c->value % room != 0) return std::nullopt;
  return read_number{c->value + *o, words};
}

std::optional<read_number> number_reader::year(std::size_t at) const {
  const auto a = below_100(at);
  if (!a || a->value < g_.setting("year_first_min", k_ten) || a->value > g_.setting("year_first_max", 20))
    return std::nullopt;
  const auto j = at + static_cast<std::size_t>(a->words);
  if (value_of("digit_only", j) == 0) {
    if (const auto u = unit(j + 1); u && *u >= 1 && *u <= k_max_digit)
      return read_number{a->value * k_hundred + *u, a->words + 2};
    return std::nullopt;
  }
  const auto b = below_100(j);
  if (!b || b->value < k_ten) return std::nullopt;
  if (scale(j + static_cast<std::size_t>(b->words))) return std::nullopt;  // "twenty thirty thousand"
  return read_number{a->value * k_hundred + b->value, a->words + b->words};
}

std::optional<read_digits> number_reader::digit_item(std::size_t at) const {
  auto single = [&](std::size_t i) -> std::optional<char> {
    if (const auto d = value_of("digit_only", i)) return static_cast<char>('0' + *d);
    const auto u = unit(i);
    if (!u || *u > k_max_digit) return std::nullopt;
    if (scale(i + 1)) return std::nullopt;  // "one hundred" is a cardinal, not a digit
    return static_cast<char>('0' + *u);
  };
  if (const auto rep = value_of("repeat", at)) {
    if (const auto d = single(at + 1)) return read_digits{std::string(static_cast<std::size_t>(*rep), *d), 2};
    return std::nullopt;
  }
  if (const auto d = single(at)) return read_digits{std::string(1, *d), 1};
  return std::nullopt;
}

std::optional<read_digits> number_reader::decimal(std::size_t at) const {
  std::string whole = "0";
  std::size_t j = at;
  if (!g_.match("decimal_point", w_, at)) {
    const auto c = cardinal(at);
    if (!c) return std::nullopt;
    whole = std::to_string(c->value);
    j += static_cast<std::size_t>(c->words);
  }
  const auto p = g_.match("decimal_point", w_, j);
  if (!p) return std::nullopt;
  j += static_cast<std::size_t>(p->words);
  // Fraction digits may come right before a scale ("two point five million").
  std::string frac;
  for (;; ++j) {
    auto d = value_of("digit_only", j);
    if (!d) d = unit(j);
    if (!d || *d > k_max_digit) break;
    frac += static_cast<char>('0' + *d);
  }
  if (frac.empty()) return std::nullopt;
  return read_digits{whole + p->value + frac, static_cast<int>(j - at)};
}

}  // namespace sluice::moe::postproc
