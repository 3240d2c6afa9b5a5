#include "dsp/file_speech.hpp"

#include "dsp/audio_file.hpp"
#include "dsp/denoiser.hpp"
#include "dsp/resampler.hpp"

namespace sluice::dsp {
namespace {

result<std::vector<float>> denoise_channel(const std::vector<float>& samples, int suppress_db) {
  auto dn = denoiser::create(suppress_db);
  if (!dn) return tl::unexpected(dn.error());
  auto out = dn->process(samples);
  if (!out) return out;
  auto tail = dn->flush();
  if (!tail) return tail;
  out->insert(out->end(), tail->begin(), tail->end());
  return out;
}

// Denoise (when configured), VAD and slicing of one channel at 16 kHz.
result<channel_speech> prepare_channel(std::vector<float>&& samples, const config::sluice_config& cfg, front_end upto) {
  channel_speech ch;
  if (cfg.audio.denoise) {
    auto d = denoise_channel(samples, cfg.audio.denoise_suppress_db);
    if (!d) return tl::unexpected(d.error());
    ch.samples = std::move(*d);
  } else {
    ch.samples = std::move(samples);
  }
  if (upto == front_end::samples) return ch;
  auto analysis = analyze_speech(ch.samples, cfg.vad);
  if (!analysis) return tl::unexpected(analysis.error());
  ch.segments = group_regions(analysis->regions, analysis->frames, cfg.segment);
  ch.regions = std::move(analysis->regions);
  return ch;
}

}  // namespace

result<file_speech> prepare_file(const std::string& path, const config::sluice_config& cfg, front_end upto) {
  auto decoded = decode_audio_file(path);
  if (!decoded) return tl::unexpected(decoded.error());
  return prepare_audio(std::move(*decoded), cfg, upto);
}

result<file_speech> prepare_audio(audio&& decoded, const config::sluice_config& cfg, front_end upto) {
  if (decoded.sample_rate != model_sample_rate) return prepare_audio(static_cast<const audio&>(decoded), cfg, upto);
  file_speech out{decoded.sample_rate, decoded.duration_s(), {}};
  for (auto& samples : decoded.channels) {
    auto ch = prepare_channel(std::move(samples), cfg, upto);
    if (!ch) return tl::unexpected(ch.error());
    out.channels.push_back(std::move(*ch));
  }
  return out;
}

result<file_speech> prepare_audio(const audio& decoded, const config::sluice_config& cfg, front_end upto) {
  auto quality = parse_resample_quality(cfg.audio.resample_quality);
  if (!quality) return tl::unexpected(quality.error());
  auto audio16 = resample(decoded, model_sample_rate, *quality);
  if (!audio16) return tl::unexpected(audio16.error());
  file_speech out{decoded.sample_rate, decoded.duration_s(), {}};
  for (auto& samples : audio16->channels) {
    auto ch = prepare_channel(std::move(samples), cfg, upto);
    if (!ch) return tl::unexpected(ch.error());
    out.channels.push_back(std::move(*ch));
  }
  return out;
}

}  // namespace sluice::dsp
