// libFuzzer target: dsp/audio_file.hpp, the container sniffing in front of every upload
// (RIFF/RF64/BW64 -> wav, OggS -> ogg opus, known foreign formats named, anything else refused).
// Beyond "no crash": probe and decode agree on the container's shape, and every refusal says why.

#include <cstddef>
#include <cstdint>
#include <span>

#include "dsp/audio_file.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const auto info = dsp::probe_audio_bytes(bytes);
  const auto decoded = dsp::decode_audio_bytes(bytes);
  if (!info) fuzz::require_message(info.error());
  if (!decoded) {
    fuzz::require_message(decoded.error());
    return 0;
  }
  fuzz::require_valid_audio(*decoded);
  fuzz::require(static_cast<bool>(info), "decode_audio_bytes accepted what probe refused");
  fuzz::require(info->channels == static_cast<int>(decoded->num_channels()) &&
                    info->sample_rate == decoded->sample_rate,
                "probe_audio_bytes and decode_audio_bytes disagree on channels or rate");
  return 0;
}
