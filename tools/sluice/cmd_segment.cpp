// sluice segment FILE...: decode -> resample to 16 kHz -> optional denoise -> VAD -> slicing,
// per channel; prints the speech regions and model-sized segments as JSON.

#include <cstdio>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "dsp/audio_file.hpp"
#include "dsp/denoiser.hpp"
#include "dsp/resampler.hpp"
#include "dsp/slicer.hpp"
#include "dsp/vad.hpp"
#include "tools/sluice/cli.hpp"

namespace sluice::cli {
namespace {

constexpr double ms_per_s = 1000.0;

double seconds(int64_t sample) { return static_cast<double>(sample) / dsp::model_sample_rate; }

// Milliseconds, rounded: enough precision for segment boundaries, short JSON.
int64_t to_ms(int64_t sample) {
  return static_cast<int64_t>(seconds(sample) * ms_per_s + 0.5);
}

result<std::vector<float>> denoise_channel(const std::vector<float>& samples, int suppress_db) {
  auto dn = dsp::denoiser::create(suppress_db);
  if (!dn) return tl::unexpected(dn.error());
  auto out = dn->process(samples);
  if (!out) return out;
  auto tail = dn->flush();
  if (!tail) return tail;
  out->insert(out->end(), tail->begin(), tail->end());
  return out;
}

result<nlohmann::json> segment_file(const std::string& path, const config::sluice_config& cfg) {
  auto decoded = dsp::decode_audio_file(path);
  if (!decoded) return tl::unexpected(decoded.error());
  auto quality = dsp::parse_resample_quality(cfg.audio.resample_quality);
  if (!quality) return tl::unexpected(quality.error());
  auto audio16 = dsp::resample(*decoded, dsp::model_sample_rate, *quality);
  if (!audio16) return tl::unexpected(audio16.error());

  nlohmann::json channels = nlohmann::json::array();
  for (std::size_t ch = 0; ch < audio16->num_channels(); ++ch) {
    const std::vector<float>* samples = &audio16->channels[ch];
    std::vector<float> cleaned;
    if (cfg.audio.denoise) {
      auto d = denoise_channel(*samples, cfg.audio.denoise_suppress_db);
      if (!d) return tl::unexpected(d.error());
      cleaned = std::move(*d);
      samples = &cleaned;
    }
    auto analysis = dsp::analyze_speech(*samples, cfg.vad);
    if (!analysis) return tl::unexpected(analysis.error());
    auto segments = dsp::group_regions(analysis->regions, analysis->frames, cfg.segment);
    nlohmann::json speech = nlohmann::json::array(), segs = nlohmann::json::array();
    for (const auto& r : analysis->regions) speech.push_back({to_ms(r.start_sample), to_ms(r.end_sample)});
    double speech_s = 0;
    for (const auto& r : analysis->regions) speech_s += seconds(r.end_sample - r.start_sample);
    for (const auto& s : segments) segs.push_back({{"start_ms", to_ms(s.start_sample)}, {"end_ms", to_ms(s.end_sample)}});
    channels.push_back({{"channel", ch}, {"speech_s", speech_s}, {"speech_ms", speech}, {"segments", segs}});
    spdlog::debug("{}: channel {}: {} speech regions, {} segments", path, ch, analysis->regions.size(),
                  segments.size());
  }
  return nlohmann::json{{"file", path},
                        {"input_sample_rate", decoded->sample_rate},
                        {"duration_s", decoded->duration_s()},
                        {"channels", channels}};
}

}  // namespace

int cmd_segment(invocation& inv) {
  if (inv.args.empty()) {
    std::fprintf(stderr, "sluice segment: give one or more audio files\n");
    return exit_usage;
  }
  int status = exit_ok;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& path : inv.args) {
    auto r = segment_file(path, inv.cfg);
    if (!r) {
      std::fprintf(stderr, "sluice segment: %s: %s (%s)\n", path.c_str(), r.error().message.c_str(),
                   to_string(r.error().code));
      status = exit_failure;
      continue;
    }
    all.push_back(std::move(*r));
  }
  std::printf("%s\n", (all.size() == 1 ? all[0] : all).dump(2).c_str());
  return status;
}

}  // namespace sluice::cli
