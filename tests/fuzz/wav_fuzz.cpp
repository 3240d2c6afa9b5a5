// libFuzzer target: dsp/wav.hpp (RIFF/RF64/BW64 chunk walk, fmt, data, every sample encoding).
// Beyond "no crash": the layout parse_wav reports lies inside the input, and decode_wav agrees
// with it (same rate, channels and frame count) or fails with a message whenever parse_wav does.

#include <cstddef>
#include <cstdint>
#include <span>

#include "dsp/wav.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const auto layout = dsp::parse_wav(bytes);
  const auto decoded = dsp::decode_wav(bytes);
  if (!layout) {
    fuzz::require_message(layout.error());
    fuzz::require(!decoded, "decode_wav accepted what parse_wav refused");
    return 0;
  }
  fuzz::require(layout->data_offset <= size && layout->data_size <= size - layout->data_offset,
                "wav layout points past the end of the input");
  fuzz::require(layout->block_align > 0 && layout->data_size % layout->block_align == 0,
                "wav data is not a whole number of frames");
  if (!decoded) {
    fuzz::require_message(decoded.error());
    return 0;
  }
  fuzz::require_valid_audio(*decoded);
  fuzz::require(decoded->sample_rate == layout->sample_rate &&
                    static_cast<int>(decoded->num_channels()) == layout->channels &&
                    decoded->num_samples() == layout->num_frames(),
                "decode_wav disagrees with parse_wav's layout");
  return 0;
}
