#include "net/json_fields.hpp"

#include <cmath>

namespace sluice::net {

namespace {

// RFC 6455 section 5.5: control frame payload <= 125 bytes, 2 of them the status code.
constexpr std::size_t max_close_reason_bytes = 123;

std::string quoted(std::string_view key) { return "\"" + valid_utf8(key) + "\""; }

// What the client sent instead, in words (never the value itself: it may be long).
std::string kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "the number " + to_wire(v);
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "the integer " + to_wire(v);
    default: return "something else";
  }
}

// Length in bytes of the UTF-8 sequence at s[i], or 0 when it is not a valid one (overlong
// forms, surrogates and code points past U+10FFFF are invalid, as RFC 3629 says).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

result<json> parse_object(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end(), nullptr, false);
  } catch (const std::exception& e) {
    // parse() without exceptions still allocates; running out of memory is the one way left.
    return fail(errc::internal, std::string("could not parse the message: ") + e.what());
  }
  if (j.is_discarded()) return fail(errc::corrupt, "text messages must be JSON (UTF-8) objects; this is not JSON");
  if (!j.is_object()) return fail(errc::invalid_argument, "text messages must be JSON objects; got " + kind_of(j));
  return j;
}

result<int64_t> get_int(const json& obj, std::string_view key, int64_t def, int64_t lo, int64_t hi) {
  const auto it = obj.find(key);
  if (it == obj.end()) return def;
  const auto refuse = [&] {
    return fail(errc::invalid_argument, quoted(key) + " must be an integer in [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "]; got " + kind_of(*it));
  };
  if (it->is_number_unsigned()) {
    const auto v = it->get<uint64_t>();
    if (hi < 0 || v > static_cast<uint64_t>(hi) || static_cast<int64_t>(v) < lo) return refuse();
    return static_cast<int64_t>(v);
  }
  if (it->is_number_integer()) {
    const auto v = it->get<int64_t>();
    if (v < lo || v > hi) return refuse();
    return v;
  }
  if (it->is_number_float()) {
    // 8000.0 (what some JSON writers make of an integer) is accepted; 8000.5 is not.
    const double v = it->get<double>();
    // 2^63 is the first double an int64 cannot hold (hi = INT64_MAX rounds up to it).
    constexpr double int64_end = 9223372036854775808.0;
    if (!std::isfinite(v) || std::floor(v) != v || v < static_cast<double>(lo) || v > static_cast<double>(hi) ||
        v >= int64_end)
      return refuse();
    return static_cast<int64_t>(v);
  }
  return refuse();
}

result<double> get_number(const json& obj, std::string_view key, double def, double lo, double hi) {
  const auto it = obj.find(key);
  if (it == obj.end()) return def;
  if (it->is_number()) {
    const double v = it->get<double>();
    if (std::isfinite(v) && v >= lo && v <= hi) return v;
  }
  return fail(errc::invalid_argument, quoted(key) + " must be a number in [" + to_wire(lo) + ", " + to_wire(hi) +
                                          "]; got " + kind_of(*it));
}

result<bool> get_bool(const json& obj, std::string_view key, bool def) {
  const auto it = obj.find(key);
  if (it == obj.end()) return def;
  if (it->is_boolean()) return it->get<bool>();
  return fail(errc::invalid_argument, quoted(key) + " must be true or false; got " + kind_of(*it));
}

result<std::string> get_string(const json& obj, std::string_view key, std::string def, std::size_t max_bytes) {
  const auto it = obj.find(key);
  if (it == obj.end()) return def;
  if (!it->is_string())
    return fail(errc::invalid_argument, quoted(key) + " must be a string; got " + kind_of(*it));
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max_bytes)
    return fail(errc::invalid_argument, quoted(key) + " is " + std::to_string(s.size()) + " bytes long; at most " +
                                            std::to_string(max_bytes) + " are allowed");
  return s;
}

std::string to_wire(const json& j) noexcept {
  try {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (...) {
    // Only allocation can fail here; a fixed message still tells the client something broke.
    return R"({"type":"error","code":"internal","reason":"the server could not encode its reply"})";
  }
}

std::string valid_utf8(std::string_view s) {
  static constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto n = utf8_sequence(s, i);
    if (n == 0) {
      out += replacement;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string close_reason_text(std::string_view s) {
  std::string out = valid_utf8(s);
  if (out.size() <= max_close_reason_bytes) return out;
  std::size_t cut = max_close_reason_bytes;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  out.resize(cut);
  return out;
}

}  // namespace sluice::net
