// Audio decoding: G.711, WAV, raw streams, Opus packets, Ogg Opus and container sniffing.
// Test audio is made at run time with sox, opusenc, espeak-ng and libopus itself.

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

namespace {

using namespace sluice;
using namespace sluice::dsp;
using bytes_t = std::vector<uint8_t>;
namespace t = sluice::test;

// Power of one frequency, normalised by length (Goertzel).
double tone_power(const std::vector<float>& x, int rate, double freq) {
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
bool carries_tone(const std::vector<float>& x, int rate, double own, double other) {
  return tone_power(x, rate, own) > 100.0 * tone_power(x, rate, other) &&
         tone_power(x, rate, own) > 1e-3;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : 1e9f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// A decoded result is well-formed: equal-length channels, finite samples in [-1, 1].
bool well_formed(const audio& a) {
  if (a.channels.empty() || a.sample_rate <= 0) return false;
  for (const auto& ch : a.channels) {
    if (ch.size() != a.num_samples()) return false;
    for (float v : ch)
      if (!std::isfinite(v) || v < -1.0f || v > 1.0f) return false;
  }
  return true;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- hand-built WAV files --------------------------------------------------------------------
// Appends `v` as `n` little-endian bytes.
void put(bytes_t& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put16(bytes_t& b, uint32_t v) { put(b, v, 2); }
void put32(bytes_t& b, uint32_t v) { put(b, v, 4); }
void put64(bytes_t& b, uint64_t v) { put(b, v, 8); }
void put_id(bytes_t& b, const char* id) { b.insert(b.end(), id, id + 4); }

bytes_t chunk(const char* id, const bytes_t& body, uint32_t size_field) {
  bytes_t b;
  put_id(b, id);
  put32(b, size_field);
  b.insert(b.end(), body.begin(), body.end());
  if (body.size() % 2) b.push_back(0);
  return b;
}
bytes_t chunk(const char* id, const bytes_t& body) {
  return chunk(id, body, static_cast<uint32_t>(body.size()));
}

bytes_t fmt_body(uint16_t tag, uint16_t channels, uint32_t rate, uint16_t align, uint16_t bits) {
  bytes_t b;
  put16(b, tag);
  put16(b, channels);
  put32(b, rate);
  put32(b, rate * align);
  put16(b, align);
  put16(b, bits);
  return b;
}

bytes_t extensible_fmt(uint16_t sub_tag, uint16_t channels, uint32_t rate, uint16_t bits,
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

bytes_t riff(const std::vector<bytes_t>& chunks, const char* magic = "RIFF",
             const char* form = "WAVE") {
  bytes_t b;
  put_id(b, magic);
  put32(b, 0);
  put_id(b, form);
  for (const auto& c : chunks) b.insert(b.end(), c.begin(), c.end());
  const auto riff_size = static_cast<uint32_t>(b.size() - 8);
  for (int i = 0; i < 4; ++i) b[4 + i] = (riff_size >> (8 * i)) & 0xFF;
  return b;
}

bytes_t s16_samples(std::initializer_list<int16_t> v) {
  bytes_t b;
  for (int16_t s : v) put16(b, static_cast<uint16_t>(s));
  return b;
}

// A small valid stereo 16-bit file: frames (1000, -1000), (2000, -2000).
bytes_t tiny_wav() {
  return riff({chunk("fmt ", fmt_body(1, 2, 8000, 4, 16)),
               chunk("data", s16_samples({1000, -1000, 2000, -2000}))});
}

// ---- Ogg pages ----------------------------------------------------------------------------------
// Byte offsets of the pages of a well-formed Ogg file.
std::vector<std::size_t> ogg_page_starts(const bytes_t& b) {
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
void fix_ogg_crcs(bytes_t& b) {
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
bytes_t mutate(const bytes_t& valid, std::mt19937& rng) {
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
bool survives(const bytes_t& b) {
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

}  // namespace

TEST_SUITE_BEGIN("decoders");

// ---- G.711 --------------------------------------------------------------------------------------
TEST_CASE("g711: all 256 codes expand exactly as sox expands them") {
  t::temp_dir dir;
  bytes_t codes(256);
  for (int i = 0; i < 256; ++i) codes[i] = static_cast<uint8_t>(i);
  t::write_bytes(dir.file("codes"), codes);
  for (const std::string law : {"ul", "al"}) {
    CAPTURE(law);
    REQUIRE(t::sox(std::string("-t ") + law + " -r 8000 -c 1 " + dir.file("codes") + " -t s16 " +
                   dir.file("ref.s16")));
    const bytes_t ref = t::read_bytes(dir.file("ref.s16"));
    REQUIRE(ref.size() == 512);
    int mismatches = 0;
    for (int i = 0; i < 256; ++i) {
      const auto expected = static_cast<int16_t>(ref[2 * i] | (ref[2 * i + 1] << 8));
      const int16_t got = law[0] == 'u' ? mulaw_to_linear(codes[i]) : alaw_to_linear(codes[i]);
      mismatches += got != expected;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("g711: compress then expand lands in the right quantisation interval") {
  // Half the width of the interval a code stands for: G.711 reconstructs at interval midpoints.
  auto mulaw_half_step = [](uint8_t c) { return 4 << (((~c) & 0x70) >> 4); };
  auto alaw_half_step = [](uint8_t c) {
    const int seg = ((c ^ 0x55) & 0x70) >> 4;
    return seg == 0 ? 8 : 4 << seg;
  };
  int bad_mu = 0, bad_a = 0, non_monotonic = 0;
  int prev_mu = -40000, prev_a = -40000;
  for (int x = -32768; x <= 32767; ++x) {
    const uint8_t mu = linear_to_mulaw(static_cast<int16_t>(x));
    const uint8_t a = linear_to_alaw(static_cast<int16_t>(x));
    const int dmu = mulaw_to_linear(mu), da = alaw_to_linear(a);
    // Beyond the largest level, the largest level is the answer (clipping).
    bad_mu += std::abs(dmu - x) > mulaw_half_step(mu) && std::abs(x) <= 32124 + mulaw_half_step(mu);
    bad_a += std::abs(da - x) > alaw_half_step(a);
    non_monotonic += dmu < prev_mu || da < prev_a;
    prev_mu = dmu;
    prev_a = da;
  }
  CHECK(bad_mu == 0);
  CHECK(bad_a == 0);
  CHECK(non_monotonic == 0);
  CHECK(mulaw_to_linear(linear_to_mulaw(32767)) == 32124);
  CHECK(mulaw_to_linear(linear_to_mulaw(-32768)) == -32124);
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    CHECK(mulaw_to_linear(linear_to_mulaw(mulaw_to_linear(c))) == mulaw_to_linear(c));
    CHECK(alaw_to_linear(linear_to_alaw(alaw_to_linear(c))) == alaw_to_linear(c));
  }
  const bytes_t some = {0x00, 0x7F, 0x80, 0xFF, 0x55, 0xD5};
  const auto f = decode_mulaw(some), g = decode_alaw(some);
  for (std::size_t i = 0; i < some.size(); ++i) {
    CHECK(f[i] == mulaw_to_linear(some[i]) / 32768.0f);
    CHECK(g[i] == alaw_to_linear(some[i]) / 32768.0f);
  }
}

// ---- WAV made by sox ----------------------------------------------------------------------------
TEST_CASE("wav: every sample format sox writes decodes to the same tone") {
  t::temp_dir dir;
  const std::string tone = " synth 0.5 sine 440 gain -6";
  REQUIRE(t::sox("-D -n -r 8000 -c 1 -e float -b 32 " + dir.file("ref.wav") + tone));
  auto ref = decode_audio_file(dir.file("ref.wav"));
  REQUIRE(ref);
  REQUIRE(ref->num_samples() == 4000);
  CHECK(carries_tone(ref->channels[0], 8000, 440, 1000));

  struct variant {
    const char* sox_args;
    const char* codec;
    bool extensible;
    float tolerance;
  };
  const variant variants[] = {
      {"-b 8", "pcm_u8", false, 1.0f / 128},
      {"-b 16", "pcm_s16le", false, 1.0f / 32768},
      {"-b 24", "pcm_s24le", true, 1.0f / 8388608},
      {"-t wavpcm -b 24", "pcm_s24le", false, 1.0f / 8388608},
      {"-b 32", "pcm_s32le", true, 1e-7f},
      {"-e float -b 32", "pcm_f32le", false, 0.0f},
      {"-e float -b 64", "pcm_f64le", false, 1e-7f},
      {"-e mu-law", "mulaw", false, 0.02f},
      {"-e a-law", "alaw", false, 0.02f},
  };
  for (const auto& v : variants) {
    const std::string args = v.sox_args;
    CAPTURE(args);
    const std::string path = dir.file("x.wav");
    REQUIRE(t::sox(std::string("-D -n -r 8000 -c 1 ") + v.sox_args + " " + path + tone));
    const bytes_t bytes = t::read_bytes(path);
    CHECK(((bytes[20] | (bytes[21] << 8)) == 0xFFFE) == v.extensible);  // what sox really wrote
    auto layout = parse_wav(bytes);
    REQUIRE(layout);
    CHECK(layout->extensible == v.extensible);

    auto a = decode_audio_file(path);
    REQUIRE(a);
    CHECK(a->sample_rate == 8000);
    REQUIRE(a->num_channels() == 1);
    CHECK(a->num_samples() == 4000);
    CHECK(max_abs_diff(a->channels[0], ref->channels[0]) <= v.tolerance * 1.01f + 1e-9f);

    auto info = probe_audio_file(path);
    REQUIRE(info);
    CHECK(info->container == "wav");
    CHECK(info->codec == v.codec);
    CHECK(info->sample_rate == 8000);
    CHECK(info->channels == 1);
    CHECK(info->num_samples == 4000);
    CHECK(info->duration_s == doctest::Approx(0.5));
  }
}

TEST_CASE("wav: 8 kHz G.711 stereo keeps each channel's signal apart") {
  t::temp_dir dir;
  for (const std::string law : {"mu-law", "a-law"}) {
    CAPTURE(law);
    const std::string path = dir.file("st.wav");
    REQUIRE(t::sox(std::string("-D -n -r 8000 -c 2 -e ") + law + " " + path +
                   " synth 1 sine 440 sine 1000 gain -3"));
    auto a = decode_audio_file(path);
    REQUIRE(a);
    REQUIRE(a->num_channels() == 2);
    CHECK(a->num_samples() == 8000);
    CHECK(carries_tone(a->channels[0], 8000, 440, 1000));
    CHECK(carries_tone(a->channels[1], 8000, 1000, 440));
  }
}

TEST_CASE("wav: four-channel extensible file keeps four channels") {
  t::temp_dir dir;
  const std::string path = dir.file("quad.wav");
  REQUIRE(t::sox("-D -n -r 16000 -c 4 -b 16 " + path +
                 " synth 0.5 sine 300 sine 700 sine 1100 sine 1900 gain -6"));
  auto layout = parse_wav(t::read_bytes(path));
  REQUIRE(layout);
  CHECK(layout->extensible);
  CHECK(layout->channels == 4);
  auto a = decode_audio_file(path);
  REQUIRE(a);
  REQUIRE(a->num_channels() == 4);
  const double freqs[] = {300, 700, 1100, 1900};
  for (int c = 0; c < 4; ++c) {
    CAPTURE(c);
    CHECK(carries_tone(a->channels[c], 16000, freqs[c], freqs[(c + 1) % 4]));
  }
}

TEST_CASE("wav: espeak-ng speech as 8 kHz mu-law matches its 16-bit twin") {
  t::temp_dir dir;
  REQUIRE(t::espeak("please hold while I transfer your call", dir.file("speech.wav")));
  REQUIRE(t::sox("-D " + dir.file("speech.wav") + " -r 8000 -b 16 " + dir.file("s16.wav")));
  REQUIRE(t::sox("-D " + dir.file("s16.wav") + " -e mu-law " + dir.file("ulaw.wav")));
  auto pcm = decode_audio_file(dir.file("s16.wav"));
  auto ulaw = decode_audio_file(dir.file("ulaw.wav"));
  REQUIRE(pcm);
  REQUIRE(ulaw);
  REQUIRE(pcm->num_samples() == ulaw->num_samples());
  CHECK(pcm->duration_s() > 1.0);
  double signal = 0, noise = 0;
  for (std::size_t i = 0; i < pcm->num_samples(); ++i) {
    const double d = pcm->channels[0][i] - ulaw->channels[0][i];
    signal += pcm->channels[0][i] * pcm->channels[0][i];
    noise += d * d;
  }
  CHECK(10 * std::log10(signal / noise) > 30.0);  // G.711 gives about 38 dB on speech
}

// ---- WAV built by hand: structure and errors ----------------------------------------------------
TEST_CASE("wav: unknown and odd-sized chunks are skipped") {
  const bytes_t odd = {'a', 'b', 'c'};
  const bytes_t b =
      riff({chunk("LIST", odd), chunk("fmt ", fmt_body(1, 2, 8000, 4, 16)),
            chunk("fact", {4, 0, 0, 0}), chunk("junk", odd),
            chunk("data", s16_samples({1000, -1000, 2000, -2000})), chunk("LIST", odd)});
  auto a = decode_wav(b);
  REQUIRE(a);
  REQUIRE(a->num_channels() == 2);
  CHECK(a->channels[0] == std::vector<float>{1000 / 32768.0f, 2000 / 32768.0f});
  CHECK(a->channels[1] == std::vector<float>{-1000 / 32768.0f, -2000 / 32768.0f});
}

TEST_CASE("wav: extensible mu-law, RF64, streaming length and float clamping") {
  const bytes_t ulaw_data = {0xFF, 0x7F, 0x80, 0x00, 0x8F, 0x0F};
  auto ext =
      decode_wav(riff({chunk("fmt ", extensible_fmt(7, 3, 8000, 8)), chunk("data", ulaw_data)}));
  REQUIRE(ext);
  REQUIRE(ext->num_channels() == 3);
  CHECK(ext->channels[2] ==
        std::vector<float>{mulaw_to_linear(0x80) / 32768.0f, mulaw_to_linear(0x0F) / 32768.0f});

  CHECK(decode_wav(
            riff({chunk("fmt ", extensible_fmt(7, 3, 8000, 8, false)), chunk("data", ulaw_data)}))
            .error()
            .code == errc::unsupported);

  bytes_t ds64;
  put64(ds64, 0);
  put64(ds64, 8);  // data size
  put64(ds64, 2);  // sample count
  put32(ds64, 0);  // table length
  const bytes_t data = s16_samples({1000, -1000, 2000, -2000});
  auto rf64 = decode_wav(riff({chunk("ds64", ds64), chunk("fmt ", fmt_body(1, 2, 8000, 4, 16)),
                               chunk("data", data, 0xFFFFFFFF)},
                              "RF64"));
  REQUIRE(rf64);
  CHECK(rf64->num_samples() == 2);
  auto no_ds64 = decode_wav(
      riff({chunk("fmt ", fmt_body(1, 2, 8000, 4, 16)), chunk("data", data, 0xFFFFFFFF)}, "RF64"));
  REQUIRE_FALSE(no_ds64);
  CHECK(has(no_ds64.error().message, "ds64"));

  // Plain RIFF with an unknown length: the data runs to the end, whole frames only.
  bytes_t streaming =
      riff({chunk("fmt ", fmt_body(1, 2, 8000, 4, 16)), chunk("data", data, 0xFFFFFFFF)});
  streaming.push_back(0x12);
  auto s = decode_wav(streaming);
  REQUIRE(s);
  CHECK(s->num_samples() == 2);

  bytes_t floats;
  for (float v : {0.5f, 3.0f, -7.0f, std::nanf("")}) put32(floats, std::bit_cast<uint32_t>(v));
  auto f = decode_wav(riff({chunk("fmt ", fmt_body(3, 1, 8000, 4, 32)), chunk("data", floats)}));
  REQUIRE(f);
  CHECK(f->channels[0] == std::vector<float>{0.5f, 1.0f, -1.0f, 0.0f});
}

TEST_CASE("wav: malformed files are named errors") {
  const bytes_t good_fmt = chunk("fmt ", fmt_body(1, 2, 8000, 4, 16));
  const bytes_t good_data = chunk("data", s16_samples({1, 2, 3, 4}));
  struct bad {
    const char* what;
    bytes_t bytes;
    errc code;
    std::vector<std::string> mentions;
  };
  bytes_t not_riff = tiny_wav();
  not_riff[0] = 'J';
  const bytes_t full = tiny_wav();
  auto with_fmt = [&](uint16_t tag, uint16_t channels, uint32_t rate, uint16_t align,
                      uint16_t bits) {
    return riff({chunk("fmt ", fmt_body(tag, channels, rate, align, bits)), good_data});
  };
  auto cut = [&](std::size_t n) { return bytes_t(full.begin(), full.begin() + n); };
  // clang-format off
  const std::vector<bad> cases = {
      {"not RIFF", not_riff, errc::corrupt, {"not a RIFF"}},
      {"not WAVE", riff({good_fmt, good_data}, "RIFF", "AVI "), errc::corrupt, {"'AVI '", "WAVE"}},
      {"too short", bytes_t{'R', 'I', 'F', 'F', 0}, errc::truncated, {"too short"}},
      {"missing fmt", riff({good_data}), errc::corrupt, {"no fmt chunk"}},
      {"missing data", riff({good_fmt}), errc::corrupt, {"no data chunk"}},
      {"truncated fmt", cut(30), errc::truncated, {"'fmt '", "announces 16", "10 are present"}},
      {"cut in a chunk header", cut(40), errc::truncated, {"no data chunk", "chunk header"}},
      {"truncated data", cut(full.size() - 3), errc::truncated, {"announces 8", "only 5"}},
      {"zero channels", with_fmt(1, 0, 8000, 4, 16), errc::corrupt, {"zero channels"}},
      {"zero rate", with_fmt(1, 2, 0, 4, 16), errc::corrupt, {"sample rate 0"}},
      {"absurd rate", with_fmt(1, 2, 5000000, 4, 16), errc::unsupported, {"5000000 Hz", "outside"}},
      {"block_align", with_fmt(1, 2, 8000, 3, 16), errc::corrupt, {"block_align is 3", "need 4"}},
      {"IMA ADPCM", with_fmt(0x11, 1, 8000, 256, 4), errc::unsupported, {"0x0011", "IMA ADPCM"}},
      {"odd tag", with_fmt(0x1234, 1, 8000, 2, 16), errc::unsupported, {"0x1234", "4660"}},
      {"float16", with_fmt(3, 1, 8000, 2, 16), errc::unsupported, {"IEEE float", "16 bits"}},
      {"short fmt", riff({chunk("fmt ", bytes_t(10, 0)), good_data}), errc::corrupt,
       {"fmt chunk is 10 bytes"}},
      {"short extensible", with_fmt(0xFFFE, 1, 8000, 2, 16), errc::corrupt, {"EXTENSIBLE"}},
      {"partial frame", riff({good_fmt, chunk("data", {1, 2, 3, 4, 5, 6})}), errc::corrupt,
       {"6 bytes", "4-byte frames"}},
      {"huge chunk", riff({chunk("LIST", {}, 0xFFFFFFF0), good_fmt, good_data}), errc::truncated,
       {"'LIST'", "4294967280"}},
  };
  // clang-format on

  for (const auto& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    auto r = decode_wav(c.bytes);
    REQUIRE_FALSE(r);
    const error& e = r.error();
    CAPTURE(e.message);
    CHECK(e.code == c.code);
    CHECK(has(e.message, "wav: "));
    for (const auto& m : c.mentions) CHECK(has(e.message, m));
  }
}

// ---- raw streams --------------------------------------------------------------------------------
TEST_CASE("raw: PCM16 and G.711 byte streams split interleaved channels") {
  t::temp_dir dir;
  const std::string synth = " synth 0.5 sine 440 sine 1000 gain -3";
  REQUIRE(t::sox("-D -n -r 8000 -c 2 -b 16 " + dir.file("ref.wav") + synth));
  auto ref = decode_audio_file(dir.file("ref.wav"));
  REQUIRE(ref);
  struct variant {
    const char* sox_type;
    sample_encoding encoding;
    float tolerance;
  };
  for (const variant& v : {variant{"-t s16", sample_encoding::pcm_s16le, 0.0f},
                           variant{"-t ul", sample_encoding::mulaw, 0.02f},
                           variant{"-t al", sample_encoding::alaw, 0.02f}}) {
    const std::string type = v.sox_type;
    CAPTURE(type);
    REQUIRE(
        t::sox("-D -n -r 8000 -c 2 " + std::string(v.sox_type) + " " + dir.file("x.raw") + synth));
    const bytes_t raw = t::read_bytes(dir.file("x.raw"));
    auto a = decode_raw(raw, raw_format{v.encoding, 8000, 2});
    REQUIRE(a);
    REQUIRE(a->num_channels() == 2);
    CHECK(a->sample_rate == 8000);
    CHECK(a->num_samples() == 4000);
    CHECK(max_abs_diff(a->channels[0], ref->channels[0]) <= v.tolerance);
    CHECK(max_abs_diff(a->channels[1], ref->channels[1]) <= v.tolerance);
    CHECK(carries_tone(a->channels[0], 8000, 440, 1000));
    CHECK(carries_tone(a->channels[1], 8000, 1000, 440));
  }
  const bytes_t three = {1, 2, 3};
  auto partial = decode_raw(three, raw_format{sample_encoding::pcm_s16le, 8000, 1});
  REQUIRE_FALSE(partial);
  CHECK(partial.error().code == errc::truncated);
  CHECK(has(partial.error().message, "1 bytes left over"));
  CHECK(decode_raw(three, raw_format{sample_encoding::mulaw, 8000, 0}).error().code ==
        errc::invalid_argument);
  CHECK(decode_raw(three, raw_format{sample_encoding::mulaw, 0, 1}).error().code ==
        errc::invalid_argument);
  auto empty = decode_raw({}, raw_format{sample_encoding::alaw, 8000, 2});
  REQUIRE(empty);
  CHECK(empty->num_channels() == 2);
  CHECK(empty->num_samples() == 0);
}

// ---- Opus packets -------------------------------------------------------------------------------
TEST_CASE("opus: packets from libopus decode per channel, with loss concealment") {
  constexpr int rate = 48000, frame = 960, frames = 50;
  int err = 0;
  OpusEncoder* enc = opus_encoder_create(rate, 2, OPUS_APPLICATION_AUDIO, &err);
  REQUIRE(err == OPUS_OK);
  opus_encoder_ctl(enc, OPUS_SET_BITRATE(96000));
  opus_int32 lookahead = 0;
  opus_encoder_ctl(enc, OPUS_GET_LOOKAHEAD(&lookahead));
  std::vector<float> left;  // the input's first channel, to compare the waveform with
  std::vector<bytes_t> packets;
  for (int f = 0; f < frames; ++f) {
    std::vector<float> pcm(2 * frame);
    for (int i = 0; i < frame; ++i) {
      const double phase = 2 * std::numbers::pi * (f * frame + i) / rate;
      pcm[2 * i] = static_cast<float>(0.4 * std::sin(440 * phase));
      pcm[2 * i + 1] = static_cast<float>(0.4 * std::sin(1000 * phase));
      left.push_back(pcm[2 * i]);
    }
    bytes_t packet(4000);
    const int n = opus_encode_float(enc, pcm.data(), frame, packet.data(),
                                    static_cast<opus_int32>(packet.size()));
    REQUIRE(n > 0);
    packet.resize(static_cast<std::size_t>(n));
    packets.push_back(packet);
  }
  opus_encoder_destroy(enc);

  auto dec = opus_decoder::create(rate, 2);
  REQUIRE(dec);
  audio out{rate, {{}, {}}};
  for (const auto& p : packets) {
    auto a = dec->decode(p);
    REQUIRE(a);
    REQUIRE(a->num_channels() == 2);
    CHECK(a->num_samples() == frame);
    CHECK(well_formed(*a));
    for (int c = 0; c < 2; ++c)
      out.channels[c].insert(out.channels[c].end(), a->channels[c].begin(), a->channels[c].end());
  }
  CHECK(carries_tone(out.channels[0], rate, 440, 1000));
  CHECK(carries_tone(out.channels[1], rate, 1000, 440));
  // Aligned by the encoder's lookahead, the waveform comes back (past the start-up).
  double dot = 0, e_in = 0, e_out = 0;
  for (std::size_t i = rate / 10; i + lookahead < left.size(); ++i) {
    dot += left[i] * out.channels[0][i + lookahead];
    e_in += left[i] * left[i];
    e_out += out.channels[0][i + lookahead] * out.channels[0][i + lookahead];
  }
  CHECK(dot / std::sqrt(e_in * e_out) > 0.95);

  auto lost = dec->decode({});
  REQUIRE(lost);
  CHECK(lost->num_samples() == frame);
  CHECK(lost->num_channels() == 2);

  auto mono16 = opus_decoder::create(16000, 1);
  REQUIRE(mono16);
  auto first_lost = mono16->decode({});
  REQUIRE(first_lost);
  CHECK(first_lost->num_samples() == 16000 / 1000 * opus_decoder::default_conceal_ms);
  auto down = mono16->decode(packets[0]);
  REQUIRE(down);
  CHECK(down->num_samples() == 320);
  CHECK(down->sample_rate == 16000);
}

TEST_CASE("opus: bad arguments and corrupt packets are errors") {
  CHECK(opus_decoder::create(44100, 1).error().code == errc::invalid_argument);
  CHECK(opus_decoder::create(48000, 3).error().code == errc::invalid_argument);
  CHECK(opus_decoder::create(48000, 0).error().code == errc::invalid_argument);
  auto dec = opus_decoder::create(48000, 1);
  REQUIRE(dec);
  // Code 1 (two equal frames) with an odd payload; code 3 without its frame-count byte;
  // code 3 announcing 0 frames.
  for (const bytes_t& p : {bytes_t{0x01, 0x00}, bytes_t{0x03}, bytes_t{0x03, 0x00}}) {
    auto r = dec->decode(p);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::corrupt);
    CHECK(has(r.error().message,
              "opus: cannot decode a " + std::to_string(p.size()) + "-byte packet"));
  }
  // The decoder is still usable, and random packets never crash it.
  std::mt19937 rng(7);
  int decoded = 0;
  for (int i = 0; i < 400; ++i) {
    bytes_t p(1 + rng() % 300);
    for (auto& b : p) b = static_cast<uint8_t>(rng());
    auto r = dec->decode(p);
    if (r) {
      decoded += well_formed(*r);
    } else {
      CHECK(r.error().code == errc::corrupt);
    }
  }
  CHECK(decoded > 0);
}

// ---- Ogg Opus -----------------------------------------------------------------------------------
TEST_CASE("ogg opus: opusenc files decode at 48 kHz with duration and tones intact") {
  t::temp_dir dir;
  REQUIRE(t::sox("-D -n -r 48000 -c 2 -b 16 " + dir.file("st.wav") +
                 " synth 2 sine 440 sine 1000 gain -6"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("st.wav") + " " + dir.file("st.opus")) == 0);
  auto a = decode_audio_file(dir.file("st.opus"));
  REQUIRE(a);
  CHECK(a->sample_rate == 48000);
  REQUIRE(a->num_channels() == 2);
  CHECK(a->num_samples() == 96000);
  CHECK(well_formed(*a));
  CHECK(carries_tone(a->channels[0], 48000, 440, 1000));
  CHECK(carries_tone(a->channels[1], 48000, 1000, 440));
  auto info = probe_audio_file(dir.file("st.opus"));
  REQUIRE(info);
  CHECK(info->container == "ogg-opus");
  CHECK(info->codec == "opus");
  CHECK(info->channels == 2);
  CHECK(info->num_samples == 96000);
  CHECK(info->duration_s == doctest::Approx(2.0));

  // An 8 kHz mono phone recording comes back at 48 kHz, one channel, its rate remembered.
  REQUIRE(t::sox("-D -n -r 8000 -c 1 -b 16 " + dir.file("m.wav") + " synth 1 sine 600 gain -6"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("m.wav") + " " + dir.file("m.opus")) == 0);
  const bytes_t mono = t::read_bytes(dir.file("m.opus"));
  auto m = decode_ogg_opus(mono);
  REQUIRE(m);
  REQUIRE(m->num_channels() == 1);
  CHECK(m->duration_s() == doctest::Approx(1.0).epsilon(0.01));
  CHECK(carries_tone(m->channels[0], 48000, 600, 1000));
  CHECK(probe_ogg_opus(mono)->input_sample_rate == 8000);
}

TEST_CASE("ogg opus: bogus, cut and foreign Ogg files are named errors") {
  t::temp_dir dir;
  REQUIRE(t::sox("-D -n -r 16000 -c 1 -b 16 " + dir.file("m.wav") + " synth 3 sine 440 gain -6"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("m.wav") + " " + dir.file("m.opus")) == 0);
  REQUIRE(t::sox("-n -r 16000 -c 1 " + dir.file("v.ogg") + " synth 0.5 sine 440"));
  const bytes_t good = t::read_bytes(dir.file("m.opus"));
  REQUIRE(decode_ogg_opus(good));

  bytes_t bogus = {'O', 'g', 'g', 'S'};
  for (int i = 0; i < 200; ++i) bogus.push_back(static_cast<uint8_t>(i * 37));
  bytes_t padded = good;
  padded.insert(padded.end(), 16, 0);
  bytes_t bad_crc = good;
  bad_crc[good.size() / 2] ^= 0x5A;
  const auto pages = ogg_page_starts(good);
  REQUIRE(pages.size() >= 5);  // OpusHead, OpusTags, three 1-second audio pages, ...
  bytes_t page_missing = good;
  page_missing.erase(page_missing.begin() + static_cast<std::ptrdiff_t>(pages[3]),
                     page_missing.begin() + static_cast<std::ptrdiff_t>(pages[4]));
  struct bad {
    const char* what;
    bytes_t bytes;
    errc code;
    std::string mention;
  };
  auto cut = [&](std::size_t n) { return bytes_t(good.begin(), good.begin() + n); };
  const std::string good_size = std::to_string(good.size());
  // clang-format off
  const std::vector<bad> cases = {
      {"header cut", cut(20), errc::truncated, "inside a page header"},
      {"data cut", cut(good.size() - 100), errc::truncated, "are present"},
      {"cut at a page boundary", cut(pages[1]), errc::truncated, "end-of-stream"},
      {"bogus", bogus, errc::truncated, "announces"},
      {"junk after the stream", padded, errc::corrupt, "no page at byte " + good_size},
      {"damaged page", bad_crc, errc::corrupt, "CRC"},
      {"page missing", page_missing, errc::corrupt, "expected 3 (pages are missing)"},
      {"vorbis", t::read_bytes(dir.file("v.ogg")), errc::unsupported, "Vorbis"},
  };
  // clang-format on

  for (const auto& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    auto r = decode_audio_bytes(c.bytes);
    REQUIRE_FALSE(r);
    CAPTURE(r.error().message);
    CHECK(r.error().code == c.code);
    CHECK(has(r.error().message, "ogg: "));
    CHECK(has(r.error().message, c.mention));
  }
}

// ---- containers and files -----------------------------------------------------------------------
TEST_CASE("audio file: sniffing, unknown containers and unreadable paths") {
  CHECK(decode_audio_bytes({}).error().code == errc::truncated);
  const bytes_t id3 = {'I', 'D', '3', 4, 0, 0, 0, 0};
  const bytes_t mp3 = {0xFF, 0xFB, 0x90, 0x64};
  const bytes_t flac = {'f', 'L', 'a', 'C', 0, 0, 0, 34};
  const bytes_t text = {'h', 'e', 'l', 'l', 'o', '!'};
  CHECK(has(decode_audio_bytes(id3).error().message, "MP3"));
  CHECK(has(decode_audio_bytes(mp3).error().message, "MPEG"));
  CHECK(has(probe_audio_bytes(flac).error().message, "FLAC"));
  auto unknown = decode_audio_bytes(text);
  CHECK(unknown.error().code == errc::unsupported);
  CHECK(has(unknown.error().message, "68 65 6C 6C 6F 21"));

  auto a = decode_audio_bytes(tiny_wav());
  REQUIRE(a);
  CHECK(a->num_samples() == 2);

  t::temp_dir dir;
  auto missing = decode_audio_file(dir.file("nope.wav"));
  CHECK(missing.error().code == errc::io);
  CHECK(has(missing.error().message, "nope.wav"));
  CHECK(probe_audio_file(dir.file("")).error().code == errc::io);  // a directory
  bytes_t cut = tiny_wav();
  cut.resize(cut.size() - 2);
  t::write_bytes(dir.file("cut.wav"), cut);
  auto cut_r = probe_audio_file(dir.file("cut.wav"));
  CHECK(cut_r.error().code == errc::truncated);
  CHECK(has(cut_r.error().message, "announces 8 bytes but only 6"));
}

TEST_CASE("decoders: hundreds of mutated and random inputs never crash") {
  t::temp_dir dir;
  REQUIRE(
      t::sox("-D -n -r 8000 -c 2 -b 16 " + dir.file("s16.wav") + " synth 0.05 sine 440 sine 1000"));
  REQUIRE(t::sox("-D -n -r 8000 -c 1 -e mu-law " + dir.file("ulaw.wav") + " synth 0.05 sine 440"));
  REQUIRE(t::sox("-D -n -r 8000 -c 3 -b 24 " + dir.file("ext.wav") + " synth 0.05 sine 440"));
  REQUIRE(t::sox("-D -n -r 16000 -c 1 -b 16 " + dir.file("m.wav") + " synth 0.3 sine 440"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("m.wav") + " " + dir.file("m.opus")) == 0);
  std::mt19937 rng(20240607);
  for (const char* name : {"s16.wav", "ulaw.wav", "ext.wav", "m.opus"}) {
    const std::string file = name;
    CAPTURE(file);
    const bytes_t valid = t::read_bytes(dir.file(name));
    REQUIRE(survives(valid));
    int ok = 0, errors = 0;
    for (int i = 0; i < 300; ++i) {
      bytes_t b = mutate(valid, rng);
      if (file.ends_with(".opus") && i % 2) fix_ogg_crcs(b);
      const bool fine = survives(b);
      if (!fine) CHECK(fine);
      (decode_audio_bytes(b) ? ok : errors)++;
    }
    CHECK(ok > 0);
    CHECK(errors > 0);
  }
  for (int i = 0; i < 300; ++i) {
    bytes_t b(rng() % 200);
    for (auto& v : b) v = static_cast<uint8_t>(rng());
    if (b.size() >= 12 && i % 3 == 0) std::copy_n("RIFF\0\0\0\0WAVE", 12, b.begin());
    if (b.size() >= 4 && i % 3 == 1) std::copy_n("OggS", 4, b.begin());
    const bool fine = survives(b);
    if (!fine) CHECK(fine);
  }
}

TEST_SUITE_END();
