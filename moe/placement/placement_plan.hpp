#pragma once
/// The placement plan (DESIGN.md: "chosen at start-up from a short benchmark of each device"):
/// how many lanes run on which device, what share of the work each lane gets, and where the
/// routed experts live. Built by a pure function from measured device speeds, so that a test
/// can hand it any mix of devices; measuring is actors/placement_probe's job.
///
/// Rules:
///   - lanes: a device runs as many lanes as its measured speed-up with all its units busy
///     says pay off (speed_all / speed_one, rounded to the nearest whole lane, at least 1,
///     at most its units): a core whose neighbour already saturates memory bandwidth, or a
///     core another process holds, does not get a lane;
///   - work: every lane's share of new utterances is in proportion to its measured speed
///     (speed_all / lanes of its device); the shares sum to 1;
///   - experts: with one device every expert is local to every lane (no expert shard, no
///     token block: DESIGN.md's "compute stays next to its data"). With several devices each
///     holds a contiguous run of every layer's routed experts, as many as its share of the
///     total speed (largest remainders, at least one per device while there are experts).

#include <cstdint>
#include <string>
#include <vector>

#include "config/error.hpp"

namespace sluice::moe {

/// One device as measured at start-up.
struct device_speed {
  std::string name;       ///< "cpu", "cuda:0", ... (for people)
  std::string kind;       ///< "cpu" | "gpu"
  int units = 1;          ///< lanes it could run: cores (or a configured core set) for a CPU, 1 per GPU
  double speed_one = 0;   ///< frames/s of batched recognizer steps with one unit busy (> 0)
  double speed_all = 0;   ///< frames/s summed over all `units` busy at once (> 0)
};

/// One lane of the plan.
struct lane_assignment {
  int device = 0;      ///< index into placement_plan::devices
  double share = 0;    ///< fraction of new utterances it should take (sums to 1 over lanes)
  double speed = 0;    ///< its expected frames/s
};

struct placement_plan {
  std::vector<device_speed> devices;
  std::vector<lane_assignment> lanes;
  std::vector<int> lanes_per_device;        ///< [devices]
  std::vector<double> device_share;         ///< [devices]: sum of its lanes' shares
  bool experts_local = true;                ///< every expert on every lane's own device
  std::vector<int32_t> experts_per_device;  ///< [devices]: routed experts per layer it holds (contiguous runs in device order)
  double total_speed = 0;                   ///< frames/s of all lanes together
  bool measured = true;                     ///< false: nominal speeds (the probe was skipped)

  int n_lanes() const { return static_cast<int>(lanes.size()); }
};

/// The plan for `devices` and a model of `n_routed` experts per layer. errc::invalid_argument
/// for no device, a device with units < 1, or a speed that is not finite and > 0.
result<placement_plan> plan_placement(const std::vector<device_speed>& devices, int32_t n_routed);

}  // namespace sluice::moe
