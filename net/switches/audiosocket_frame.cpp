#include "net/switches/audiosocket_frame.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace sluice::net::switches {

namespace {

struct rate_of_kind {
  audiosocket_kind kind;
  int hz;
};

constexpr rate_of_kind audio_kinds[] = {
    {audiosocket_kind::slin, 8000},     {audiosocket_kind::slin12, 12000}, {audiosocket_kind::slin16, 16000},
    {audiosocket_kind::slin24, 24000},  {audiosocket_kind::slin32, 32000}, {audiosocket_kind::slin44, 44100},
    {audiosocket_kind::slin48, 48000},  {audiosocket_kind::slin96, 96000}, {audiosocket_kind::slin192, 192000},
};

constexpr uint16_t max_payload = std::numeric_limits<uint16_t>::max();
constexpr unsigned byte_bits = 8;

}  // namespace

audiosocket_header parse_audiosocket_header(const uint8_t* bytes) {
  return {bytes[0], static_cast<uint16_t>((static_cast<unsigned>(bytes[1]) << byte_bits) | bytes[2])};
}

std::optional<int> audiosocket_sample_rate(uint8_t kind) {
  for (const auto& k : audio_kinds)
    if (static_cast<uint8_t>(k.kind) == kind) return k.hz;
  return std::nullopt;
}

bool known_audiosocket_kind(uint8_t kind) {
  switch (static_cast<audiosocket_kind>(kind)) {
    case audiosocket_kind::hangup:
    case audiosocket_kind::uuid:
    case audiosocket_kind::dtmf:
    case audiosocket_kind::error: return true;
    default: return audiosocket_sample_rate(kind).has_value();
  }
}

std::string format_uuid(const uint8_t* bytes) {
  // 8-4-4-4-12 hex digits: dashes before bytes 4, 6, 8 and 10.
  std::string out;
  for (std::size_t i = 0; i < audiosocket_uuid_bytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    out += hex;
  }
  return out;
}

bool valid_dtmf_digit(char c) {
  return (c >= '0' && c <= '9') || c == '*' || c == '#' || (c >= 'A' && c <= 'D');
}

std::vector<uint8_t> make_audiosocket_message(audiosocket_kind kind, const std::vector<uint8_t>& payload) {
  const auto n = static_cast<uint16_t>(std::min<std::size_t>(payload.size(), max_payload));
  std::vector<uint8_t> out{static_cast<uint8_t>(kind), static_cast<uint8_t>(n >> byte_bits),
                           static_cast<uint8_t>(n & 0xFF)};
  out.insert(out.end(), payload.begin(), payload.begin() + n);
  return out;
}

std::vector<uint8_t> make_audiosocket_error(const std::string& reason) {
  return make_audiosocket_message(audiosocket_kind::error, std::vector<uint8_t>(reason.begin(), reason.end()));
}

}  // namespace sluice::net::switches
