// libFuzzer target: dsp/opus_decoder.hpp, packet by packet as RTP and WebSocket frames arrive.
// The input is a stream description followed by length-prefixed packets:
//   byte 0   output rate (low 3 bits, index into supported_rates; 5..7 test the refusal),
//            channels (bits 3..4: 0..3, where 0 and 3 test the refusal)
//   then     [length byte][packet]... ; length 0 is a lost packet (concealment), 0xFF resets;
//            at most max_packets_per_input of them
// Beyond "no crash": every decoded packet keeps the decoder's rate and channels, lasts 2.5 to
// 120 ms, and keeps the audio contract; a refused packet says why.

#include <cstddef>
#include <cstdint>
#include <span>

#include "dsp/opus_decoder.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

namespace {

constexpr uint8_t rate_mask = 0x07;
constexpr int channel_shift = 3;
constexpr uint8_t channel_mask = 0x03;
constexpr uint8_t reset_marker = 0xFF;
constexpr int rate_table_size = 8;
constexpr int min_packet_tenth_ms = 25;    // 2.5 ms
constexpr int max_packet_tenth_ms = 1200;  // 120 ms
constexpr int tenths_per_second = 10000;
// A stream of lost packets conceals up to 120 ms each; more packets than this per input only
// slow the fuzzer down without reaching new code.
constexpr int max_packets_per_input = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  constexpr int rates[rate_table_size] = {8000, 12000, 16000, 24000, 48000, 44100, 0, -1};
  const int rate = rates[data[0] & rate_mask];
  const int channels = (data[0] >> channel_shift) & channel_mask;
  auto dec = dsp::opus_decoder::create(rate, channels);
  const bool supported = (data[0] & rate_mask) < 5 && channels >= 1 && channels <= 2;
  fuzz::require(dec.has_value() == supported, "opus_decoder::create misjudged its arguments");
  if (!dec) {
    fuzz::require_message(dec.error());
    return 0;
  }
  const int min_samples = rate * min_packet_tenth_ms / tenths_per_second;
  const int max_samples = rate * max_packet_tenth_ms / tenths_per_second;
  std::size_t at = 1;
  for (int packets = 0; at < size && packets < max_packets_per_input; ++packets) {
    const std::size_t len = data[at++];
    if (len == reset_marker) {
      dec->reset();
      continue;
    }
    const std::size_t n = std::min(len, size - at);
    const auto out = dec->decode(std::span<const uint8_t>(data + at, n));
    at += n;
    if (!out) {
      fuzz::require_message(out.error());
      continue;
    }
    fuzz::require_valid_audio(*out);
    fuzz::require(out->sample_rate == rate && static_cast<int>(out->num_channels()) == channels,
                  "decoded packet changed rate or channels");
    const auto samples = static_cast<int>(out->num_samples());
    fuzz::require(samples >= min_samples && samples <= max_samples,
                  "decoded packet shorter than 2.5 ms or longer than 120 ms");
  }
  return 0;
}
