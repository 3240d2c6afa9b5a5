#pragma once
/// The `sluice` command line: global options, the config they produce, and the subcommands.

#include <string>
#include <vector>

#include "config/sluice_config.hpp"

namespace sluice::cli {

/// What every subcommand receives: the effective config and its own arguments.
struct invocation {
  config::sluice_config cfg;
  std::vector<std::string> args;  ///< positional arguments and subcommand flags, in order
};

/// Exit codes: 0 ok, 1 the input was bad or processing failed, 2 the command line was wrong.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;
inline constexpr int exit_usage = 2;

int cmd_probe(invocation& inv);
int cmd_segment(invocation& inv);
int cmd_transcribe(invocation& inv);
int cmd_config(invocation& inv);
int cmd_devices(invocation& inv);
int cmd_serve(invocation& inv);
int cmd_stream(invocation& inv);
int cmd_keys(invocation& inv);

/// True when `flag` (e.g. "--json") is among the args; removes it.
bool take_flag(std::vector<std::string>& args, const std::string& flag);

}  // namespace sluice::cli
