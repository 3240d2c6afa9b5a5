#pragma once
/// Checked access to JSON that came from a client, and the one way JSON goes back out.
///
/// Every accessor reads one field of an object and returns its value, the default when the
/// field is absent, or an error naming the field and what it allows when the field has the
/// wrong type or is out of range. Nothing here throws: client input never becomes an
/// exception on a network thread. Numbers are never truncated: an integer field refuses 8.5
/// and 1e12 instead of turning them into 8 or a wrapped int.
///
/// `to_wire` is the only way a JSON value is serialised for a client: it cannot throw, and
/// any byte sequence that is not valid UTF-8 in a string (text that came from somewhere other
/// than a JSON parser: paths, query strings, error messages quoting a single byte) goes out as
/// U+FFFD, so every reply is valid UTF-8 and valid JSON.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/error.hpp"

namespace sluice::net {

using json = nlohmann::json;

/// An object parsed from a client's text message. errc::corrupt when the text is not JSON
/// (or not valid UTF-8: the parser refuses it), errc::invalid_argument when it is JSON but not
/// an object. Never throws.
result<json> parse_object(std::string_view text);

/// Integer field in [lo, hi]. Refuses strings, bools, fractions (8.5) and numbers outside the
/// range, even when they would fit after truncation.
result<int64_t> get_int(const json& obj, std::string_view key, int64_t def, int64_t lo, int64_t hi);

/// Number field (integer or fraction) in [lo, hi]; refuses NaN-free values outside it.
result<double> get_number(const json& obj, std::string_view key, double def, double lo, double hi);

/// Boolean field: true or false only (no 0/1, no "true").
result<bool> get_bool(const json& obj, std::string_view key, bool def);

/// String field of at most `max_bytes` bytes (UTF-8 as parsed). Longer strings are refused,
/// never cut (a cut could split a character).
result<std::string> get_string(const json& obj, std::string_view key, std::string def, std::size_t max_bytes);

/// A JSON value as sent to a client: never throws; invalid UTF-8 inside strings becomes U+FFFD.
std::string to_wire(const json& j) noexcept;

/// `s` with every byte sequence that is not valid UTF-8 replaced by U+FFFD (for text echoed to
/// a client outside JSON, e.g. a close frame's reason).
std::string valid_utf8(std::string_view s);

/// A close frame's reason: valid UTF-8 of at most 123 bytes (RFC 6455 section 5.5: a control
/// frame payload is at most 125 bytes, two of which carry the code), cut on a character
/// boundary.
std::string close_reason_text(std::string_view s);

}  // namespace sluice::net
