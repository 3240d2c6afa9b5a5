// Hundreds of mutated and random inputs through every decoder: no crash, only named errors.

#include <doctest/doctest.h>

#include "tests/dsp/decoder_test_helpers.hpp"

using namespace sluice::test::decoders;

TEST_SUITE_BEGIN("decoders");

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
