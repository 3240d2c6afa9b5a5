#include <algorithm>
#include <cstdio>

#include "kernels/device.hpp"
#include "tools/sluice/cli.hpp"

namespace sluice::cli {

bool take_flag(std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end()) return false;
  args.erase(it);
  return true;
}

int cmd_config(invocation& inv) {
  if (!inv.args.empty()) {
    std::fprintf(stderr, "sluice config: unexpected argument '%s'\n", inv.args[0].c_str());
    return exit_usage;
  }
  std::fputs(config::to_toml(inv.cfg).c_str(), stdout);
  return exit_ok;
}

int cmd_devices(invocation& inv) {
  for (const auto& d : kernels::list_devices()) {
    if (d.kind == kernels::device_kind::cpu)
      std::printf("cpu        %s, %d logical cores\n", d.name.c_str(), d.cores);
    else
      std::printf("cuda:%-5d %s, %d SMs, %.1f GiB\n", d.index, d.name.c_str(), d.cores, d.memory_gib);
  }
  if (auto v = kernels::cuda_library_versions())
    std::printf("cuda libs  %s\n", v->c_str());
  auto gpus = kernels::cuda_devices();
  if (!gpus) std::printf("no GPU     %s\n", gpus.error().message.c_str());
  return exit_ok;
}

}  // namespace sluice::cli
