#pragma once
/// Bytes as lower-case hex, two digits per byte (key ids and hashes, HMAC and Digest values).
/// Header-only: the parser libraries the fuzzers link use it too.

#include <cstddef>
#include <string>

namespace sluice::net {

inline std::string to_hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 0xF];
  }
  return out;
}

}  // namespace sluice::net
