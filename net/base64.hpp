#pragma once
/// Standard base64 (RFC 4648 section 4): media payloads of switches (Twilio), SDES keys in SDP
/// (RFC 4568). Pure functions over untrusted text.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::net {

/// Standard base64 (RFC 4648 section 4, padding required) to bytes; nullopt if malformed.
std::optional<std::vector<uint8_t>> decode_base64(std::string_view text);
/// Bytes to standard base64, padded.
std::string encode_base64(std::span<const uint8_t> bytes);

}  // namespace sluice::net
