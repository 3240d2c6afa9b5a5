#pragma once
/// Small JSON helpers shared by the switch protocols: parse a text frame as an object with a
/// clear error, read typed fields leniently where the switches send numbers as strings, and
/// word a transcript event's words.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "actors/messages.hpp"

namespace sluice::net::switches {

/// `text` as a JSON object; otherwise why not ("not JSON: ...", "not a JSON object").
tl::expected<nlohmann::json, std::string> parse_object(std::string_view text);

/// The string field `key` of `j`; nullopt when absent or not a string.
std::optional<std::string> string_field(const nlohmann::json& j, const char* key);

/// An integer given as a JSON number or a decimal string (Twilio sends numbers as strings);
/// nullopt when absent, of another type, or not a whole number.
std::optional<long long> integer_field(const nlohmann::json& j, const char* key);

/// The mean word confidence of `ev` (0 without words).
float mean_confidence(const actors::transcript_event& ev);

/// `ev`'s words as [{"word","start_ms","end_ms","confidence"}].
nlohmann::json words_json(const actors::transcript_event& ev);

}  // namespace sluice::net::switches
