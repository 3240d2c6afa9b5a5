// Uploads' decoding: lengths and channels read from headers alone (WAV, raw, Ogg Opus), and a
// piecewise decode to 16 kHz that gives what decoding whole and resampling gives, and stops at
// its frame budget.

#include <doctest/doctest.h>

#include "dsp/bounded_decode.hpp"
#include "tests/dsp/decoder_test_helpers.hpp"

using namespace sluice::test::decoders;

TEST_SUITE_BEGIN("decoders");

TEST_CASE("probe_upload: length and channels from the headers of WAV, raw and Ogg Opus bodies") {
  t::temp_dir dir;
  REQUIRE(t::sox("-D -n -r 8000 -c 2 -e mu-law " + dir.file("c.wav") + " synth 3 sine 440 sine 1000 gain -6"));
  const bytes_t wav = t::read_bytes(dir.file("c.wav"));
  auto w = probe_upload(wav, std::nullopt);
  REQUIRE(w);
  CHECK(w->container == "wav");
  CHECK(w->channels == 2);
  CHECK(w->sample_rate == 8000);
  CHECK(w->num_samples == 24000);
  CHECK(w->duration_s == doctest::Approx(3.0));

  // Raw: 10 s of 16 kHz mono PCM16 is 320,000 bytes; three channels of mu-law at 8 kHz, 2 s.
  const bytes_t pcm(320000, 0);
  auto r = probe_upload(pcm, raw_format{sample_encoding::pcm_s16le, 16000, 1});
  REQUIRE(r);
  CHECK(r->container == "raw");
  CHECK(r->num_samples == 160000);
  CHECK(r->duration_s == doctest::Approx(10.0));
  auto r3 = probe_upload(bytes_t(48000, 0xFF), raw_format{sample_encoding::mulaw, 8000, 3});
  REQUIRE(r3);
  CHECK(r3->channels == 3);
  CHECK(r3->duration_s == doctest::Approx(2.0));
  auto partial = probe_upload(bytes_t(5, 0), raw_format{sample_encoding::pcm_s16le, 8000, 1});
  REQUIRE_FALSE(partial);
  CHECK(partial.error().code == errc::truncated);
  CHECK(probe_upload(pcm, raw_format{sample_encoding::pcm_s16le, 3, 1}).error().code == errc::invalid_argument);

  REQUIRE(t::sox("-D -n -r 16000 -c 1 -b 16 " + dir.file("m.wav") + " synth 4 sine 300 gain -6"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("m.wav") + " " + dir.file("m.opus")) == 0);
  auto o = probe_upload(t::read_bytes(dir.file("m.opus")), std::nullopt);
  REQUIRE(o);
  CHECK(o->container == "ogg-opus");
  CHECK(o->channels == 1);
  CHECK(o->num_samples == 4 * 48000);
}

TEST_CASE("decode_bounded: piecewise to 16 kHz equals decoding whole then resampling, per container") {
  t::temp_dir dir;
  REQUIRE(t::sox("-D -n -r 8000 -c 2 -e mu-law " + dir.file("c.wav") + " synth 5 sine 440 sine 1000 gain -6"));
  REQUIRE(t::sox("-D -n -r 48000 -c 2 -b 16 " + dir.file("s.wav") + " synth 5 sine 440 sine 1000 gain -6"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("s.wav") + " " + dir.file("s.opus")) == 0);
  for (const char* name : {"c.wav", "s.opus"}) {
    CAPTURE(name);
    const bytes_t file = t::read_bytes(dir.file(name));
    auto whole = decode_audio_bytes(file);
    REQUIRE(whole);
    auto reference = resample(*whole, model_sample_rate, resample_quality::high);
    REQUIRE(reference);
    auto pieces = decode_bounded(file, std::nullopt, whole->num_samples(), resample_quality::high);
    REQUIRE(pieces);
    CHECK(pieces->sample_rate == model_sample_rate);
    REQUIRE(pieces->num_channels() == 2);
    CHECK(pieces->num_samples() == doctest::Approx(5 * model_sample_rate).epsilon(0.001));
    CHECK(pieces->channels == reference->channels);
  }
  // A raw body: the WAV's data chunk as mu-law bytes.
  const bytes_t wav = t::read_bytes(dir.file("c.wav"));
  auto layout = parse_wav(wav);
  REQUIRE(layout);
  const bytes_t body(wav.begin() + static_cast<std::ptrdiff_t>(layout->data_offset),
                     wav.begin() + static_cast<std::ptrdiff_t>(layout->data_offset + layout->data_size));
  auto from_raw = decode_bounded(body, raw_format{sample_encoding::mulaw, 8000, 2}, 40000, resample_quality::high);
  auto from_wav = decode_bounded(wav, std::nullopt, 40000, resample_quality::high);
  REQUIRE(from_raw);
  REQUIRE(from_wav);
  CHECK(from_raw->channels == from_wav->channels);
}

TEST_CASE("decode_bounded: decoding stops with limit_exceeded once past its frame budget") {
  t::temp_dir dir;
  REQUIRE(t::sox("-D -n -r 16000 -c 1 -b 16 " + dir.file("m.wav") + " synth 3 sine 300 gain -6"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("m.wav") + " " + dir.file("m.opus")) == 0);
  // One second less than each file holds (16 kHz WAV, 48 kHz Opus).
  const std::vector<std::pair<std::string, std::size_t>> cases = {{"m.wav", 2 * 16000}, {"m.opus", 2 * 48000}};
  for (const auto& [name, budget] : cases) {
    CAPTURE(name);
    auto r = decode_bounded(t::read_bytes(dir.file(name)), std::nullopt, budget, resample_quality::high);
    REQUIRE_FALSE(r);
    CAPTURE(r.error().message);
    CHECK(r.error().code == errc::limit_exceeded);
    CHECK(has(r.error().message, std::to_string(budget) + " frames"));
  }
}

TEST_SUITE_END();
