// libFuzzer target: dsp/ogg_opus.hpp (Ogg page walk, Opus headers, libopusfile decoding).
// Beyond "no crash": decode_ogg_opus fails whenever probe_ogg_opus does, and when both succeed
// they agree on the channels, the rate is 48 kHz and the audio keeps its contract.
// libopus/libopusfile are Debian's (not instrumented): coverage guides only through our code.

#include <cstddef>
#include <cstdint>
#include <span>

#include "dsp/ogg_opus.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const auto info = dsp::probe_ogg_opus(bytes);
  if (!info) {
    fuzz::require_message(info.error());
    const auto decoded = dsp::decode_ogg_opus(bytes);
    fuzz::require(!decoded, "decode_ogg_opus accepted what probe_ogg_opus refused");
    return 0;
  }
  fuzz::require(info->channels > 0, "probe_ogg_opus reported no channels");
  const auto decoded = dsp::decode_ogg_opus(bytes);
  if (!decoded) {
    fuzz::require_message(decoded.error());
    return 0;
  }
  fuzz::require_valid_audio(*decoded);
  fuzz::require(decoded->sample_rate == dsp::ogg_opus_sample_rate, "ogg opus not at 48 kHz");
  fuzz::require(static_cast<int>(decoded->num_channels()) == info->channels,
                "decode_ogg_opus and probe_ogg_opus disagree on channels");
  return 0;
}
