#pragma once
/// Config fields whose values are an `enum class`: one list of (value, name) pairs per enum is
/// the only spelling of its names, used to read TOML and overrides, to print the config, and by
/// the modules that log or report the value. An enum joins by declaring, next to it,
///   constexpr const auto& enum_names(E) { return e_names; }   // std::array<std::pair<E, std::string_view>, N>
/// (found by argument-dependent lookup), and a section declares the field with the constraint
/// enum_of<E>{{allowed values}}.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace sluice::config {

/// An enum field must hold one of `allowed` (a subset of the enum's names).
template <class E>
struct enum_of {
  std::initializer_list<E> allowed;
};

/// The one spelling of `e` ("?" for a value with no name).
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
constexpr std::string_view enum_name(E e) {
  for (const auto& [v, n] : enum_names(E{}))
    if (v == e) return n;
  return "?";
}

/// The value named `name`; nullopt for no such name.
template <class E>
constexpr std::optional<E> enum_parse(std::string_view name) {
  for (const auto& [v, n] : enum_names(E{}))
    if (n == name) return v;
  return std::nullopt;
}

/// "is not allowed: choose one of \"a\", \"b\"" for the allowed names of `c`.
template <class E>
std::string not_allowed(const enum_of<E>& c) {
  std::string list;
  for (E a : c.allowed) list += (list.empty() ? "\"" : ", \"") + std::string(enum_name(a)) + "\"";
  return "is not allowed: choose one of " + list;
}

/// Why `e` is not allowed; empty when it is.
template <class E>
std::string constraint_problem(E e, const enum_of<E>& c) {
  for (E a : c.allowed)
    if (a == e) return {};
  return not_allowed(c);
}

/// Reads the text of an enum field: the value, or nullopt and `why` (unknown names and names
/// outside `c` get the same message, listing the allowed ones).
template <class E>
std::optional<E> enum_from_text(std::string_view text, const enum_of<E>& c, std::string& why) {
  if (auto v = enum_parse<E>(text); v && constraint_problem(*v, c).empty()) return v;
  why = not_allowed(c);
  return std::nullopt;
}

}  // namespace sluice::config
