// Opus packets, Ogg Opus files and container sniffing; audio made with opusenc and libopus.

#include <doctest/doctest.h>

#include "tests/dsp/decoder_test_helpers.hpp"

using namespace sluice::test::decoders;

TEST_SUITE_BEGIN("decoders");

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

TEST_SUITE_END();
