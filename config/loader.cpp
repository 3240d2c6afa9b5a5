// Loading, overriding, validating and printing sluice_config. Every operation walks the same
// field lists (each section's visit()), so a key added to a section is loadable, overridable,
// validated and printed with no other change.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include <toml++/toml.h>

#include "config/constraints.hpp"
#include "config/sluice_config.hpp"

namespace sluice::config {
namespace {

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string show(bool b) { return b ? "true" : "false"; }
std::string show(int i) { return std::to_string(i); }
std::string show(double d) { return format_number(d); }
// A TOML basic string: quote, backslash and control characters escaped, so that to_toml prints
// every string value as apply_toml will read it back (TOML 1.0, "String").
std::string toml_string(std::string_view s) {
  constexpr unsigned char first_printable = 0x20, del = 0x7F;
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < first_printable || c == del) {
          char buf[sizeof "\\u0000"];
          std::snprintf(buf, sizeof buf, "\\u%04X", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}
std::string show(const std::string& s) { return toml_string(s); }
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
std::string show(E e) {
  return toml_string(enum_name(e));
}

const char* type_name(bool) { return "a boolean"; }
const char* type_name(int) { return "an integer"; }
const char* type_name(double) { return "a number"; }
const char* type_name(const std::string&) { return "a string"; }
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
const char* type_name(E) {
  return "a string";
}

// Every constraint check is config/constraints.hpp's, shared with modules that take one section.
template <class T, class C>
std::string check(const T& v, const C& c) {
  return constraint_problem(v, c);
}

error bad(std::string_view key, const std::string& value, const std::string& why) {
  return error{errc::invalid_config, std::string(key) + " = " + value + " " + why};
}

// ---- reading a value from TOML ------------------------------------------------------------

std::string describe_node(const toml::node& n) {
  if (auto s = n.as_string()) return quote(s->get());
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) return format_number(f->get());
  if (auto b = n.as_boolean()) return show(b->get());
  if (n.is_table()) return "a table";
  if (n.is_array()) return "an array";
  return "a date/time";
}

std::optional<bool> from_node(const toml::node& n, bool*) {
  if (auto b = n.as_boolean()) return b->get();
  return std::nullopt;
}
std::optional<int> from_node(const toml::node& n, int*) {
  if (auto i = n.as_integer()) {
    int64_t v = i->get();
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      return std::nullopt;
    return static_cast<int>(v);
  }
  return std::nullopt;
}
std::optional<double> from_node(const toml::node& n, double*) {
  if (auto f = n.as_floating_point()) return f->get();
  if (auto i = n.as_integer()) return static_cast<double>(i->get());
  return std::nullopt;
}
std::optional<std::string> from_node(const toml::node& n, std::string*) {
  if (auto s = n.as_string()) return s->get();
  return std::nullopt;
}

// ---- reading a value from command-line text -----------------------------------------------

std::optional<bool> from_text(std::string_view t, bool*) {
  if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  return std::nullopt;
}
std::optional<int> from_text(std::string_view t, int*) {
  int v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc{} || p != t.data() + t.size() || t.empty()) return std::nullopt;
  return v;
}
std::optional<double> from_text(std::string_view t, double*) {
  std::string s(t);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}
std::optional<std::string> from_text(std::string_view t, std::string*) { return std::string(t); }

// Whether `t` is well-formed UTF-8 (RFC 3629: shortest form, no surrogates, at most U+10FFFF).
// TOML documents are UTF-8, so a string from the command line that is not could be printed by
// to_toml but never read back.
bool valid_utf8(std::string_view t) {
  constexpr unsigned char cont_mask = 0xC0, cont_tag = 0x80;
  std::size_t i = 0;
  while (i < t.size()) {
    const auto c = static_cast<unsigned char>(t[i]);
    std::size_t len = 0;
    unsigned char lo = cont_tag, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;            // no overlong 3-byte forms
    else if (c == 0xED) len = 3, hi = 0x9F;            // no surrogates
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;            // no overlong 4-byte forms
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;            // nothing above U+10FFFF
    else return false;
    if (t.size() - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(t[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b & cont_mask) != cont_tag) return false;
    }
    i += len;
  }
  return true;
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// Applies one TOML table to one section; collects the first error.
template <class Section>
result<void> apply_section(Section& sec, std::string_view name, const toml::table& tbl,
                           std::string_view source) {
  std::vector<std::string> seen;
  std::optional<error> err;
  sec.visit([&](std::string_view key, auto& field, const auto& constraint, std::string_view) {
    seen.emplace_back(key);
    if (err) return;
    const toml::node* node = tbl.get(key);
    if (!node) return;
    using T = std::decay_t<decltype(field)>;
    std::string full = std::string(name) + "." + std::string(key);
    if constexpr (std::is_enum_v<T>) {
      // An enum is written as one of its names: read the string, then the name.
      auto text = from_node(*node, static_cast<std::string*>(nullptr));
      std::string why = "has the wrong type: expected a string";
      auto e = text ? enum_from_text(*text, constraint, why) : std::nullopt;
      if (!e) {
        err = error{errc::invalid_config, std::string(source) + ": " + full + " = " +
                                              (text ? toml_string(*text) : describe_node(*node)) + " " + why};
        return;
      }
      field = *e;
      return;
    } else {
      auto v = from_node(*node, static_cast<T*>(nullptr));
      if (!v) {
        err = error{errc::invalid_config, std::string(source) + ": " + full + " = " +
                                              describe_node(*node) + " has the wrong type: expected " +
                                              type_name(T{})};
        return;
      }
      if (auto why = check(*v, constraint); !why.empty()) {
        err = error{errc::invalid_config, std::string(source) + ": " + full + " = " + show(*v) + " " + why};
        return;
      }
      field = *v;
    }
  });
  if (err) return tl::unexpected(*err);
  for (auto&& [k, _] : tbl) {
    if (std::find(seen.begin(), seen.end(), k.str()) == seen.end()) {
      std::vector<std::string> keys;
      for (auto& s : seen) keys.push_back(std::string(name) + "." + s);
      return fail(errc::invalid_config, std::string(source) + ": unknown key " + std::string(name) +
                                            "." + std::string(k.str()) + " (known: " + join_keys(keys) + ")");
    }
  }
  return {};
}

std::vector<std::string> section_names(sluice_config& cfg) {
  std::vector<std::string> names;
  cfg.visit_sections([&](std::string_view n, auto&) { names.emplace_back(n); });
  return names;
}

}  // namespace

result<void> apply_toml(sluice_config& cfg, std::string_view text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return fail(errc::invalid_config, std::string(source) + ":" + std::to_string(b.line) + ":" +
                                          std::to_string(b.column) + ": TOML syntax error: " +
                                          std::string(e.description()));
  }
  auto names = section_names(cfg);
  for (auto&& [k, node] : root) {
    if (std::find(names.begin(), names.end(), k.str()) == names.end())
      return fail(errc::invalid_config, std::string(source) + ": unknown section [" +
                                            std::string(k.str()) + "] (known: " + join_keys(names) + ")");
    if (!node.is_table())
      return fail(errc::invalid_config, std::string(source) + ": " + std::string(k.str()) +
                                            " must be a [section] table");
  }
  result<void> out;
  cfg.visit_sections([&](std::string_view name, auto& sec) {
    if (!out) return;
    if (auto* tbl = root.get_as<toml::table>(name)) out = apply_section(sec, name, *tbl, source);
  });
  return out;
}

result<void> apply_toml_file(sluice_config& cfg, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, "cannot open config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_toml(cfg, ss.str(), path);
}

result<void> apply_override(sluice_config& cfg, std::string_view assignment) {
  auto eq = assignment.find('=');
  auto dot = assignment.find('.');
  if (eq == std::string_view::npos || dot == std::string_view::npos || dot > eq)
    return fail(errc::invalid_config, "override " + quote(assignment) +
                                          " must look like section.key=value (e.g. vad.threshold_db=6)");
  auto section = assignment.substr(0, dot);
  auto key = assignment.substr(dot + 1, eq - dot - 1);
  auto text = assignment.substr(eq + 1);
  bool found_section = false, found_key = false;
  std::optional<error> err;
  std::vector<std::string> keys;
  cfg.visit_sections([&](std::string_view name, auto& sec) {
    if (name != section) return;
    found_section = true;
    sec.visit([&](std::string_view k, auto& field, const auto& constraint, std::string_view) {
      keys.push_back(std::string(name) + "." + std::string(k));
      if (k != key) return;
      found_key = true;
      using T = std::decay_t<decltype(field)>;
      if (!valid_utf8(text)) {  // the bytes are not echoed: they could not be printed
        err = error{errc::invalid_config,
                    std::string(assignment.substr(0, eq)) + ": the value is not valid UTF-8 text"};
        return;
      }
      if constexpr (std::is_enum_v<T>) {
        std::string why;
        auto e = enum_from_text(text, constraint, why);
        if (!e) {
          err = bad(assignment.substr(0, eq), quote(text), why);
          return;
        }
        field = *e;
        return;
      } else {
        auto v = from_text(text, static_cast<T*>(nullptr));
        if (!v) {
          err = bad(assignment.substr(0, eq), quote(text), std::string("is not ") + type_name(T{}));
          return;
        }
        if (auto why = check(*v, constraint); !why.empty()) {
          err = bad(assignment.substr(0, eq), show(*v), why);
          return;
        }
        field = *v;
      }
    });
  });
  if (!found_section)
    return fail(errc::invalid_config, "unknown section " + quote(section) + " in override " +
                                          quote(assignment) + " (known: " + join_keys(section_names(cfg)) + ")");
  if (!found_key)
    return fail(errc::invalid_config, "unknown key " + std::string(section) + "." + std::string(key) +
                                          " (known: " + join_keys(keys) + ")");
  if (err) return tl::unexpected(*err);
  return {};
}

result<void> validate(sluice_config& cfg) {
  std::optional<error> err;
  cfg.visit_sections([&](std::string_view name, auto& sec) {
    if (err) return;
    sec.visit([&](std::string_view key, auto& field, const auto& constraint, std::string_view) {
      if (err) return;
      if (auto why = check(field, constraint); !why.empty())
        err = error{errc::invalid_config, std::string(name) + "." + std::string(key) + " = " + show(field) + " " + why};
    });
    if (err) return;
    if (auto why = sec.check(); !why.empty()) err = error{errc::invalid_config, "[" + std::string(name) + "] " + why};
  });
  if (err) return tl::unexpected(*err);
  return {};
}

std::string to_toml(sluice_config& cfg) {
  std::ostringstream os;
  bool first = true;
  cfg.visit_sections([&](std::string_view name, auto& sec) {
    os << (first ? "" : "\n") << "[" << name << "]\n";
    first = false;
    sec.visit([&](std::string_view key, auto& field, const auto&, std::string_view doc) {
      os << "# " << doc << "\n" << key << " = " << show(field) << "\n";
    });
  });
  return os.str();
}

std::vector<std::string> known_keys(sluice_config& cfg) {
  std::vector<std::string> keys;
  cfg.visit_sections([&](std::string_view name, auto& sec) {
    sec.visit([&](std::string_view key, auto&, const auto&, std::string_view) {
      keys.push_back(std::string(name) + "." + std::string(key));
    });
  });
  return keys;
}

}  // namespace sluice::config
