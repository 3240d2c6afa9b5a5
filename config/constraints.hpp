#pragma once
/// Checking a value against its field constraint (field.hpp), and a whole section against its
/// fields and cross-field rules. Used by the loader and by modules that take one section
/// directly (dsp::vad, moe::beam_search_decoder, ...), so every path applies the same rules.

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "config/enum_field.hpp"
#include "config/field.hpp"

namespace sluice::config {

/// Shortest round-trip text of a number ("9", "12.5", "1e-05").
inline std::string format_number(double d) {
  // std::to_chars without a precision gives the shortest text that reads back as exactly `d`
  // (an ostream's default 6 significant digits would not).
  if (d == 0.0) d = 0.0;  // -0 would print as "-0", which TOML reads back as the integer 0
  char buf[std::numeric_limits<double>::max_digits10 + sizeof "-.e-308"];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return ec == std::errc{} ? std::string(buf, end) : std::string("?");
}

/// Why `v` violates the constraint ("is out of range: allowed 1 .. 40"); empty when allowed.
inline std::string constraint_problem(double v, const range& r) {
  if (!std::isfinite(v) || v < r.min || v > r.max)
    return "is out of range: allowed " + format_number(r.min) + " .. " + format_number(r.max);
  return {};
}
inline std::string constraint_problem(int v, const range& r) { return constraint_problem(static_cast<double>(v), r); }
inline std::string constraint_problem(const std::string& v, const one_of& o) {
  for (auto a : o.allowed)
    if (v == a) return {};
  std::string list;
  for (auto a : o.allowed) list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
  return "is not allowed: choose one of " + list;
}
inline std::string constraint_problem(const std::string& v, const non_empty&) {
  return v.empty() ? "must not be empty" : std::string{};
}
inline std::string constraint_problem(const std::string&, const any_string&) { return {}; }
inline std::string constraint_problem(bool, const any_bool&) { return {}; }
inline std::string constraint_problem(const std::string& v, const name_list&) {
  bool in_name = false, gap = false;
  for (char c : v) {
    if (c == ',') {
      in_name = gap = false;
    } else if (c == ' ') {
      gap = in_name;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return "has a control character: give names separated by commas";
    } else {
      if (gap) return "has a space inside a name: separate names with commas";
      in_name = true;
    }
  }
  return {};
}

/// The first field of `section` that violates its constraint, as "key = value why", or the
/// section's cross-field problem; empty when the section is valid.
template <class Section>
std::string section_problem(Section section) {
  std::string problem;
  section.visit([&](std::string_view key, const auto& field, const auto& constraint, std::string_view) {
    if (!problem.empty()) return;
    if (auto why = constraint_problem(field, constraint); !why.empty()) {
      std::ostringstream os;
      if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>) os << '"' << field << '"';
      else if constexpr (std::is_same_v<std::decay_t<decltype(field)>, bool>) os << (field ? "true" : "false");
      else if constexpr (std::is_enum_v<std::decay_t<decltype(field)>>) os << '"' << enum_name(field) << '"';
      else os << field;
      problem = std::string(key) + " = " + os.str() + " " + why;
    }
  });
  if (problem.empty()) problem = section.check();
  return problem;
}

}  // namespace sluice::config
