#pragma once
/// The start-up benchmark behind the placement plan (moe/placement/placement_plan.hpp): how
/// fast this machine's CPU runs batched recognizer steps with one core busy and with every core
/// busy (one thread per core, each with its own recognizer and streams, as lanes run). Bounded
/// by [engine] placement_probe_ms in all; 0 skips it (tests) and gives nominal speeds.
/// Runs on the caller's thread plus one thread per core while it measures; call it before the
/// engine serves anything (engine::start).

#include <chrono>
#include <string>

#include "config/error.hpp"
#include "moe/placement/placement_plan.hpp"
#include "moe/recognizer/recognizer_resources.hpp"

namespace sluice::actors {

/// The CPU as one device of `units` cores: speed_one and speed_all in input frames/s, measured
/// for about `budget` in all (`budget` > 0). Synthetic features: the figures compare cores, not
/// models.
moe::device_speed probe_cpu(const moe::recognizer_resources& res, int units, std::chrono::milliseconds budget);

/// The plan for this machine (a CPU of as many cores as this process may use: allowed_cpus()): measured
/// when `budget` > 0, else nominal (every core a lane of speed 1, measured = false).
result<moe::placement_plan> plan_this_machine(const moe::recognizer_resources& res, std::chrono::milliseconds budget);

/// One line for the start-up log: lanes per device, shares, where experts run.
std::string describe(const moe::placement_plan& plan);

/// The plan as the JSON served at GET /v1/placement.
std::string placement_json(const moe::placement_plan& plan);

}  // namespace sluice::actors
