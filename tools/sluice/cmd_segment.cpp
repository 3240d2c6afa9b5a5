// sluice segment FILE...: the shared front end (dsp/file_speech.hpp) per channel; prints the speech regions and model-sized segments as JSON.

#include <cstdio>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "dsp/audio.hpp"
#include "dsp/file_speech.hpp"
#include "tools/sluice/cli.hpp"

namespace sluice::cli {
namespace {

constexpr double ms_per_s = 1000.0;

double seconds(int64_t sample) { return static_cast<double>(sample) / dsp::model_sample_rate; }

// Milliseconds, rounded: enough precision for segment boundaries, short JSON.
int64_t to_ms(int64_t sample) {
  return static_cast<int64_t>(seconds(sample) * ms_per_s + 0.5);
}

result<nlohmann::json> segment_file(const std::string& path, const config::sluice_config& cfg) {
  auto speech = dsp::prepare_file(path, cfg);
  if (!speech) return tl::unexpected(speech.error());
  nlohmann::json channels = nlohmann::json::array();
  for (std::size_t ch = 0; ch < speech->channels.size(); ++ch) {
    const auto& c = speech->channels[ch];
    nlohmann::json speech_ms = nlohmann::json::array(), segs = nlohmann::json::array();
    double speech_s = 0;
    for (const auto& r : c.regions) {
      speech_ms.push_back({to_ms(r.start_sample), to_ms(r.end_sample)});
      speech_s += seconds(r.end_sample - r.start_sample);
    }
    for (const auto& s : c.segments) segs.push_back({{"start_ms", to_ms(s.start_sample)}, {"end_ms", to_ms(s.end_sample)}});
    channels.push_back({{"channel", ch}, {"speech_s", speech_s}, {"speech_ms", speech_ms}, {"segments", segs}});
    spdlog::debug("{}: channel {}: {} speech regions, {} segments", path, ch, c.regions.size(), c.segments.size());
  }
  return nlohmann::json{{"file", path},
                        {"input_sample_rate", speech->input_sample_rate},
                        {"duration_s", speech->duration_s},
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
