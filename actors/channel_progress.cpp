#include "actors/channel_progress.hpp"

#include "dsp/opus_decoder.hpp"

namespace sluice::actors {

std::optional<int64_t> audio_message_us(const std::string& codec, int sample_rate, std::span<const uint8_t> bytes) {
  if (sample_rate <= 0) return std::nullopt;
  int64_t samples = 0;
  if (codec == "pcm_s16le") samples = static_cast<int64_t>(bytes.size()) / 2;
  else if (codec == "mulaw" || codec == "alaw") samples = static_cast<int64_t>(bytes.size());
  else if (codec == "opus") samples = dsp::opus_decoder::packet_samples(bytes, sample_rate);
  else return std::nullopt;
  if (codec == "opus" && samples == 0) return std::nullopt;
  return samples * 1'000'000 / sample_rate;
}

}  // namespace sluice::actors
