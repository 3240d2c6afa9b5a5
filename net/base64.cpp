#include "net/base64.hpp"

#include <algorithm>

namespace sluice::net {

namespace {

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr unsigned sextet_bits = 6, byte_bits = 8, quad = 4;

int sextet(char c) {
  const auto p = alphabet.find(c);
  return p == std::string_view::npos ? -1 : static_cast<int>(p);
}

}  // namespace

std::optional<std::vector<uint8_t>> decode_base64(std::string_view text) {
  if (text.size() % quad != 0) return std::nullopt;
  std::vector<uint8_t> out;
  out.reserve(text.size() / quad * 3);
  for (std::size_t i = 0; i < text.size(); i += quad) {
    const bool last = i + quad == text.size();
    unsigned acc = 0;
    int pad = 0;
    for (std::size_t k = 0; k < quad; ++k) {
      const char c = text[i + k];
      if (c == '=') {
        // Padding only at the end of the last quad, at most two.
        if (!last || k < 2) return std::nullopt;
        ++pad;
        acc <<= sextet_bits;
        continue;
      }
      if (pad > 0) return std::nullopt;
      const int v = sextet(c);
      if (v < 0) return std::nullopt;
      acc = (acc << sextet_bits) | static_cast<unsigned>(v);
    }
    out.push_back(static_cast<uint8_t>(acc >> (2 * byte_bits)));
    if (pad < 2) out.push_back(static_cast<uint8_t>((acc >> byte_bits) & 0xFF));
    if (pad < 1) out.push_back(static_cast<uint8_t>(acc & 0xFF));
  }
  return out;
}

std::string encode_base64(std::span<const uint8_t> bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    unsigned acc = 0;
    for (std::size_t k = 0; k < 3; ++k) acc = (acc << byte_bits) | (k < n ? bytes[i + k] : 0u);
    for (std::size_t k = 0; k < quad; ++k)
      out += k <= n ? alphabet[(acc >> (sextet_bits * (3 - k))) & 0x3F] : '=';
  }
  return out;
}

}  // namespace sluice::net
