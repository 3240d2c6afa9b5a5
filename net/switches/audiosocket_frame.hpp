#pragma once
/// Asterisk AudioSocket framing (pure, no sockets): every message is a 1-byte kind, a 2-byte
/// big-endian payload length and the payload (asterisk/documentation AudioSocket.md and
/// res/res_audiosocket.c).
///
/// Kinds: 0x00 hangup; 0x01 the call's UUID (16 bytes, first); 0x03 one DTMF digit (ASCII);
/// 0x10 signed-linear 16-bit little-endian mono PCM at 8 kHz; the newer kinds 0x11-0x18 the
/// same at 12, 16, 24, 32, 44.1, 48, 96 and 192 kHz (0x12 = 16 kHz is named in Asterisk's
/// notes; the others follow the order of res_audiosocket.c's switch); 0xff an error, payload an
/// optional application-specific code (Asterisk's own: 1 byte).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::net::switches {

enum class audiosocket_kind : uint8_t {
  hangup = 0x00,
  uuid = 0x01,
  dtmf = 0x03,
  slin = 0x10,  ///< 8 kHz
  slin12 = 0x11,
  slin16 = 0x12,
  slin24 = 0x13,
  slin32 = 0x14,
  slin44 = 0x15,
  slin48 = 0x16,
  slin96 = 0x17,
  slin192 = 0x18,
  error = 0xff,
};

/// Bytes of a message header (kind and length).
inline constexpr std::size_t audiosocket_header_bytes = 3;
/// Bytes of the UUID payload.
inline constexpr std::size_t audiosocket_uuid_bytes = 16;

struct audiosocket_header {
  uint8_t kind = 0;
  uint16_t length = 0;  ///< payload bytes
};

/// Reads a header from its 3 bytes.
audiosocket_header parse_audiosocket_header(const uint8_t* bytes);

/// Whether `kind` is one this server knows (see audiosocket_kind).
bool known_audiosocket_kind(uint8_t kind);

/// The sample rate (Hz) of an audio kind; nullopt for any other kind.
std::optional<int> audiosocket_sample_rate(uint8_t kind);

/// The 16 UUID bytes as the canonical lower-case 8-4-4-4-12 text.
std::string format_uuid(const uint8_t* bytes);

/// Whether `c` is a DTMF digit Asterisk sends (0-9, *, #, A-D).
bool valid_dtmf_digit(char c);

/// One whole message: header and payload.
std::vector<uint8_t> make_audiosocket_message(audiosocket_kind kind, const std::vector<uint8_t>& payload);
/// An error message (kind 0xff) whose payload is `reason` (text, cut at the 16-bit length).
std::vector<uint8_t> make_audiosocket_error(const std::string& reason);

}  // namespace sluice::net::switches
