// The RTP audio decoder's handling of RFC 3389 comfort noise: the pause after a CN packet is
// filled with noise at the level the packet gives (RMS measured here against the level's
// definition, 0 dBov = full scale), a pause without one stays digital silence, and an audio
// packet ends the noise.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "net/sip/rtp_audio_decoder.hpp"

using namespace sluice::net::sip;

namespace {
playout_item packet(uint8_t pt, std::vector<uint8_t> payload) {
  playout_item it;
  it.what = playout_item::kind::packet;
  it.payload_type = pt;
  it.payload = std::move(payload);
  return it;
}

playout_item pause(uint32_t units) {
  playout_item it;
  it.what = playout_item::kind::silence;
  it.duration = units;
  return it;
}

double rms(const std::vector<int16_t>& v, std::size_t from, std::size_t to) {
  double sum = 0;
  for (std::size_t i = from; i < to; ++i) sum += static_cast<double>(v[i]) * v[i];
  return std::sqrt(sum / static_cast<double>(to - from));
}
}  // namespace

TEST_SUITE("rtp audio decoder") {
  TEST_CASE("comfort noise fills the following pause at its level, and speech ends it") {
    codec_choice pcmu;
    pcmu.comfort_noise_pt = 13;
    rtp_audio_decoder d(pcmu);
    std::vector<int16_t> out;
    d.decode(pause(800), out);
    CHECK(rms(out, 0, out.size()) == 0);  // no CN yet: silence
    d.decode(packet(13, {40}), out);       // -40 dBov
    CHECK(out.size() == 800);              // a CN packet adds no time itself
    d.decode(pause(8000), out);
    REQUIRE(out.size() == 8800);
    const double expected = 32767 * std::pow(10.0, -40.0 / 20);  // 327.7
    const double got = rms(out, 800, 8800);
    MESSAGE("comfort noise RMS " << got << ", expected " << expected);
    CHECK(std::abs(got - expected) <= 0.1 * expected);
    CHECK(d.comfort_noise_samples() == 8000);
    d.decode(packet(0, std::vector<uint8_t>(160, 0xff)), out);  // mu-law 0xff: silence
    d.decode(pause(800), out);
    CHECK(rms(out, 8960, out.size()) == 0);  // speech ended the noise
  }

  TEST_CASE("a stream that did not negotiate CN ignores payload type 13") {
    codec_choice pcmu;  // comfort_noise_pt -1
    rtp_audio_decoder d(pcmu);
    std::vector<int16_t> out;
    d.decode(packet(13, {30}), out);
    d.decode(pause(800), out);
    CHECK(rms(out, 0, out.size()) == 0);
    CHECK(d.comfort_noise_samples() == 0);
  }
}
