// G.711, WAV and raw streams; test audio made at run time with sox and espeak-ng.

#include <doctest/doctest.h>

#include "tests/dsp/decoder_test_helpers.hpp"

using namespace sluice::test::decoders;

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
TEST_SUITE_END();
