// sluice probe FILE...: what each file holds, from its headers.

#include <cstdio>

#include <nlohmann/json.hpp>

#include "dsp/audio_file.hpp"
#include "tools/sluice/cli.hpp"

namespace sluice::cli {

int cmd_probe(invocation& inv) {
  const bool as_json = take_flag(inv.args, "--json");
  if (inv.args.empty()) {
    std::fprintf(stderr, "sluice probe: give one or more audio files\n");
    return exit_usage;
  }
  int status = exit_ok;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& path : inv.args) {
    auto info = dsp::probe_audio_file(path);
    if (!info) {
      std::fprintf(stderr, "sluice probe: %s: %s (%s)\n", path.c_str(), info.error().message.c_str(),
                   to_string(info.error().code));
      status = exit_failure;
      continue;
    }
    if (as_json) {
      all.push_back({{"file", path},
                     {"container", info->container},
                     {"codec", info->codec},
                     {"sample_rate", info->sample_rate},
                     {"channels", info->channels},
                     {"samples", info->num_samples},
                     {"duration_s", info->duration_s}});
    } else {
      std::printf("%s: %s, %s, %d Hz, %d channel%s, %llu samples, %.3f s\n", path.c_str(),
                  info->container.c_str(), info->codec.c_str(), info->sample_rate, info->channels,
                  info->channels == 1 ? "" : "s", static_cast<unsigned long long>(info->num_samples),
                  info->duration_s);
    }
  }
  if (as_json) std::printf("%s\n", all.dump(2).c_str());
  return status;
}

}  // namespace sluice::cli
