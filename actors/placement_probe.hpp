#pragma once
/// The start-up benchmark behind the placement plan (moe/placement/placement_plan.hpp): how
/// fast this machine's CPU runs batched recognizer steps with one core busy and with every core
/// busy (one thread per core, each with its own recognizer and streams, as lanes run). Bounded
/// by [engine] placement_probe_ms in all; 0 skips it (tests) and gives nominal speeds.
/// Runs on the caller's thread plus one thread per core while it measures; call it before the
/// engine serves anything (engine::start).

#include <chrono>
#include <functional>
#include <vector>
#include <string>

#include "config/error.hpp"
#include "moe/placement/placement_plan.hpp"
#include "moe/recognizer/recognizer_resources.hpp"

namespace sluice::actors {

/// The CPU as one device of `units` cores: speed_one and speed_all in input frames/s, measured
/// for about `budget` in all (`budget` > 0). Synthetic features: the figures compare cores, not
/// models.
moe::device_speed probe_cpu(const moe::recognizer_resources& res, int units, std::chrono::milliseconds budget);

/// Where plan_this_machine keeps measured probes for later starts: one JSON file per machine
/// key (CPU model name, the allowed cores, the model's architecture, the probe budget) in `dir`.
/// `dir` empty or `max_age` zero: nothing is read or written.
struct probe_cache {
  std::string dir;
  std::chrono::seconds max_age{0};
  /// $XDG_CACHE_HOME/sluice, else $HOME/.cache/sluice, kept `hours` (none when `hours` is 0 or
  /// neither variable is set): [engine] placement_cache_hours.
  static probe_cache user_default(int hours);
};

/// Runs `work` and returns the share of `cpus`' time that other processes were busy meanwhile
/// (0..1, from /proc/stat and /proc/self/stat clock ticks), or -1 where those cannot be read.
double others_busy_share(const std::vector<int>& cpus, const std::function<void()>& work);
/// A probe is kept only when other processes used at most this share of the cores during it.
inline constexpr double max_others_share_kept = 0.05;

/// What a kept probe must match: the file format, the CPU model, the cores this process may use,
/// the model's architecture (what the probe runs) and the budget.
std::string probe_key(const moe::recognizer_resources& res, std::chrono::milliseconds budget);

/// The file a probe of this machine, model and budget is kept in ("" when the cache is off).
std::string probe_cache_file(const probe_cache& cache, const moe::recognizer_resources& res,
                             std::chrono::milliseconds budget);

/// The plan for this machine (a CPU of as many cores as this process may use: allowed_cpus()): measured
/// when `budget` > 0, else nominal (every core a lane of speed 1, measured = false). With a
/// cache, a probe of the same key younger than its max_age is reused instead of measuring again
/// (a missing, stale, unreadable or mismatched file is measured and rewritten; a file that cannot
/// be written is skipped with a debug log line). A probe during which other processes used more
/// than max_others_share_kept of the cores plans this start only and is not kept.
result<moe::placement_plan> plan_this_machine(const moe::recognizer_resources& res, std::chrono::milliseconds budget,
                                              const probe_cache& cache = {});

/// One line for the start-up log: lanes per device, shares, where experts run.
std::string describe(const moe::placement_plan& plan);

/// The plan as the JSON served at GET /v1/placement.
std::string placement_json(const moe::placement_plan& plan);

}  // namespace sluice::actors
