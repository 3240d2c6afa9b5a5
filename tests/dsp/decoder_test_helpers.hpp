#pragma once
/// Shared helpers of the decoder test files: tone detection, WAV/Ogg byte builders, fuzzing.

#include <doctest/doctest.h>
#include <opus/opus.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "dsp/audio_file.hpp"
#include "dsp/g711.hpp"
#include "dsp/ogg_opus.hpp"
#include "dsp/opus_decoder.hpp"
#include "dsp/pcm.hpp"
#include "dsp/wav.hpp"
#include "tests/common/audio_tools.hpp"

namespace sluice::test::decoders {

using namespace sluice;
using namespace sluice::dsp;
using bytes_t = std::vector<uint8_t>;
namespace t = sluice::test;

// Power of one frequency, normalised by length (Goertzel).
inline double tone_power(const std::vector<float>& x, int rate, double freq) {
  const double coeff = 2.0 * std::cos(2.0 * std::numbers::pi * freq / rate);
  double s1 = 0, s2 = 0;
  for (float v : x) {
    const double s = v + coeff * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  const double n = static_cast<double>(x.size());
  return (s1 * s1 + s2 * s2 - coeff * s1 * s2) / (n * n);
}

// True when `x` carries `own` and hardly any of `other` (the other channel's tone).
inline bool carries_tone(const std::vector<float>& x, int rate, double own, double other) {
  return tone_power(x, rate, own) > 100.0 * tone_power(x, rate, other) &&
         tone_power(x, rate, own) > 1e-3;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : 1e9f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// A decoded result is well-formed: equal-length channels, finite samples in [-1, 1].
inline bool well_formed(const audio& a) {
  if (a.channels.empty() || a.sample_rate <= 0) return false;
  for (const auto& ch : a.channels) {
    if (ch.size() != a.num_samples()) return false;
    for (float v : ch)
      if (!std::isfinite(v) || v < -1.0f || v > 1.0f) return false;
  }
  return true;
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- hand-built WAV files --------------------------------------------------------------------
// Appends `v` as `n` little-endian bytes.
inline void put(bytes_t& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put16(bytes_t& b, uint32_t v) { put(b, v, 2); }
inline void put32(bytes_t& b, uint32_t v) { put(b, v, 4); }
inline void put64(bytes_t& b, uint64_t v) { put(b, v, 8); }
inline void put_id(bytes_t& b, const char* id) { b.insert(b.end(), id, id + 4); }

inline bytes_t chunk(const char* id, const bytes_t& body, uint32_t size_field) {
  bytes_t b;
  put_id(b, id);
  put32(b, size_field);
  b.insert(b.end(), body.begin(), body.end());
  if (body.size() % 2) b.push_back(0);
  return b;
}
inline bytes_t chunk(const char* id, const bytes_t& body) {
  return chunk(id, body, static_cast<uint32_t>(body.size()));
}

inline bytes_t fmt_body(uint16_t tag, uint16_t channels, uint32_t rate, uint16_t align, uint16_t bits) {
  bytes_t b;
  put16(b, tag);
  put16(b, channels);
  put32(b, rate);
  put32(b, rate * align);
  put16(b, align);
  put16(b, bits);
  return b;
}

inline bytes_t extensible_fmt(uint16_t sub_tag, uint16_t channels, uint32_t rate, uint16_t bits,
                       bool standard_guid = true) {
  bytes_t b = fmt_body(0xFFFE, channels, rate, static_cast<uint16_t>(channels * bits / 8), bits);
  put16(b, 22);    // cbSize
  put16(b, bits);  // valid bits
  put32(b, 0);     // channel mask
  put16(b, sub_tag);
  const uint8_t tail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                            0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
  b.insert(b.end(), tail, tail + 14);
  if (!standard_guid) b.back() ^= 0xFF;
  return b;
}

inline bytes_t riff(const std::vector<bytes_t>& chunks, const char* magic = "RIFF",
             const char* form = "WAVE") {
  bytes_t b;
  // Reserving up front also keeps GCC 12's -Wstringop-overflow false positive on insert() quiet.
  std::size_t total = 12;
  for (const auto& c : chunks) total += c.size();
  b.reserve(total);
  put_id(b, magic);
  put32(b, 0);
  put_id(b, form);
  for (const auto& c : chunks) b.insert(b.end(), c.begin(), c.end());
  const auto riff_size = static_cast<uint32_t>(b.size() - 8);
  for (int i = 0; i < 4; ++i) b[4 + i] = (riff_size >> (8 * i)) & 0xFF;
  return b;
}

inline bytes_t s16_samples(std::initializer_list<int16_t> v) {
  bytes_t b;
  for (int16_t s : v) put16(b, static_cast<uint16_t>(s));
  return b;
}

// A small valid stereo 16-bit file: frames (1000, -1000), (2000, -2000).
inline bytes_t tiny_wav() {
  return riff({chunk("fmt ", fmt_body(1, 2, 8000, 4, 16)),
               chunk("data", s16_samples({1000, -1000, 2000, -2000}))});
}

// ---- Ogg pages ----------------------------------------------------------------------------------
// Byte offsets of the pages of a well-formed Ogg file.
inline std::vector<std::size_t> ogg_page_starts(const bytes_t& b) {
  std::vector<std::size_t> starts;
  for (std::size_t pos = 0; pos + 27 <= b.size();) {
    starts.push_back(pos);
    std::size_t len = 27 + b[pos + 26];
    for (std::size_t i = 0; i < b[pos + 26]; ++i) len += b[pos + 27 + i];
    pos += len;
  }
  return starts;
}

// Rewrites every page's CRC, so mutations reach libopusfile instead of failing the CRC check.
inline void fix_ogg_crcs(bytes_t& b) {
  const auto starts = ogg_page_starts(b);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::size_t begin = starts[k], end = k + 1 < starts.size() ? starts[k + 1] : b.size();
    if (end < begin + 27) continue;
    uint32_t crc = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const uint8_t v = (i >= begin + 22 && i < begin + 26) ? 0 : b[i];
      crc ^= static_cast<uint32_t>(v) << 24;
      for (int bit = 0; bit < 8; ++bit)
        crc = (crc & 0x80000000u) ? (crc << 1) ^ 0x04C11DB7u : crc << 1;
    }
    for (int i = 0; i < 4; ++i) b[begin + 22 + i] = (crc >> (8 * i)) & 0xFF;
  }
}

// ---- fuzzing ------------------------------------------------------------------------------------
// Mutates `valid` in one of several ways, biased to the first bytes where the headers live.
inline bytes_t mutate(const bytes_t& valid, std::mt19937& rng) {
  bytes_t b = valid;
  auto pick = [&](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  auto byte = [&] { return static_cast<uint8_t>(pick(256)); };
  switch (pick(5)) {
    case 0:  // a few bytes in the headers
      for (std::size_t i = 0, n = 1 + pick(4); i < n; ++i)
        b[pick(std::min<std::size_t>(b.size(), 96))] = byte();
      break;
    case 1:  // a few bytes anywhere
      for (std::size_t i = 0, n = 1 + pick(8); i < n; ++i) b[pick(b.size())] = byte();
      break;
    case 2:  // cut
      b.resize(pick(b.size()));
      break;
    case 3:  // insert junk
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size())), 1 + pick(16), byte());
      break;
    default:  // a size field set to something extreme
      for (std::size_t i = 0; i < 4; ++i)
        b[std::min(b.size() - 1, 4 * pick(std::min<std::size_t>(b.size() / 4, 24)) + i)] =
            pick(2) ? 0xFF : 0x7F;
      break;
  }
  return b;
}

// Decodes and probes `b`; whatever happens must be a well-formed result or a named error.
inline bool survives(const bytes_t& b) {
  auto check = [](const auto& r, auto&& good) {
    if (r) return good(*r);
    const std::string& m = r.error().message;
    return has(m, "wav:") || has(m, "ogg:") || has(m, "audio:");
  };
  const bool decoded = check(decode_audio_bytes(b), [](const audio& a) { return well_formed(a); });
  const bool probed =
      check(probe_audio_bytes(b), [](const audio_info& i) { return i.channels > 0; });
  return decoded && probed;
}


}  // namespace sluice::test::decoders
