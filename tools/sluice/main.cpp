// sluice: the command-line entry point. Parses global options into the config, sets up logging,
// and hands the rest to a subcommand.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "actors/allocator.hpp"
#include "tools/sluice/cli.hpp"

namespace {

using namespace sluice;

constexpr const char* usage_text = R"(usage: sluice [global options] <command> [args]

commands:
  probe FILE...        format, codec, rate, channels and duration of audio files  [--json]
  segment FILE...      speech segments per channel as JSON (VAD + slicing at 16 kHz)
  transcribe FILE...   speech to text per channel  [--format text|json|srt|vtt] [--hotwords FILE]
                       [--hotword-weight W] [--labels agent,customer] [--no-lm]
                       [--lexical]  text/srt/vtt: the words as spoken instead of the display
                                    form (numbers written, punctuated, cased; json has both)
  config               print the effective configuration as TOML
  devices              compute devices (CPU features, CUDA GPUs) this build can use
  serve                HTTP/WebSocket server: dashboard, /v1/stream, /funasr, /v1/transcribe,
                       /metrics ([server] host/port, e.g. --server.port=9000)
  stream FILE          stream a file to a server in real time, print partials and finals
                       [--url ws://127.0.0.1:8080/v1/stream] [--concurrency N] [--speed X] [--token KEY]
  keys add|list|revoke API keys for serve: keys add --tenant NAME --scopes stream,read prints a
                       new key once and stores its hash in auth.keys_file [--file PATH]

global options:
  --config FILE              load a TOML config (see config/sluice.toml)
  --set section.key=value    override one config value (repeatable)
  --section.key=value        the same, shorter (e.g. --vad.threshold_db=6)
  -h, --help                 this text
)";

struct command {
  const char* name;
  int (*run)(cli::invocation&);
};

constexpr command commands[] = {
    {"probe", cli::cmd_probe},
    {"segment", cli::cmd_segment},
    {"transcribe", cli::cmd_transcribe},
    {"config", cli::cmd_config},
    {"devices", cli::cmd_devices},
    {"serve", cli::cmd_serve},
    {"stream", cli::cmd_stream},
    {"keys", cli::cmd_keys},
};

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "sluice: %s\n\n%s", msg.c_str(), usage_text);
  return cli::exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
  cli::invocation inv;
  std::vector<std::string> overrides;
  std::string config_path;
  std::string command_name;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value_of = [&](const char* opt) -> std::string {
      if (i + 1 >= argc) return {};
      (void)opt;
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(usage_text, stdout);
      return cli::exit_ok;
    } else if (a == "--config") {
      config_path = value_of("--config");
      if (config_path.empty()) return usage_error("--config needs a file");
    } else if (a.rfind("--config=", 0) == 0) {
      config_path = a.substr(std::strlen("--config="));
    } else if (a == "--set") {
      auto v = value_of("--set");
      if (v.empty()) return usage_error("--set needs section.key=value");
      overrides.push_back(v);
    } else if (a.rfind("--", 0) == 0 && a.find('.') != std::string::npos &&
               a.find('=') != std::string::npos && a.find('.') < a.find('=')) {
      overrides.push_back(a.substr(2));
    } else if (command_name.empty() && a.rfind("-", 0) != 0) {
      command_name = a;
    } else {
      inv.args.push_back(a);
    }
  }
  if (command_name.empty()) return usage_error("no command given");

  if (!config_path.empty()) {
    if (auto r = config::apply_toml_file(inv.cfg, config_path); !r) {
      std::fprintf(stderr, "sluice: %s\n", r.error().message.c_str());
      return cli::exit_usage;
    }
  }
  for (const auto& o : overrides) {
    if (auto r = config::apply_override(inv.cfg, o); !r) {
      std::fprintf(stderr, "sluice: %s\n", r.error().message.c_str());
      return cli::exit_usage;
    }
  }
  if (auto r = config::validate(inv.cfg); !r) {
    std::fprintf(stderr, "sluice: invalid configuration: %s\n", r.error().message.c_str());
    return cli::exit_usage;
  }
  // Logs go to stderr: stdout carries the command's output (JSON, transcripts).
  spdlog::set_default_logger(spdlog::stderr_color_mt("sluice"));
  spdlog::set_level(spdlog::level::from_str(inv.cfg.log.level));
  // Before any thread starts (see actors/allocator.hpp).
  if (auto how = actors::tune_allocator(); !how.empty())
    spdlog::debug("allocator: {}", how);

  for (const auto& c : commands)
    if (command_name == c.name) return c.run(inv);
  return usage_error("unknown command '" + command_name + "'");
}
