#pragma once
/// What happens to a (token, expert) pair over its expert shard's capacity in one layer of a
/// micro-batch. One enum, one spelling: [engine] overflow, the logs, engine_bench and the
/// moe dispatch (moe::micro_batch::dispatch) all use these names and values.

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace sluice::config {

enum class overflow_policy : uint8_t {
  /// A pair whose expert a spillway replicates goes to the overflow block (the spillway runs
  /// it); any other pair stays on its own full shard. Every pair keeps the expert its router
  /// chose, so the output never depends on the batch. The engine's default.
  keep,
  /// As keep for replicated experts; any other pair moves to its token's next-best expert on a
  /// shard with room, else stays. Bounded shard work, slightly batch-dependent output.
  reroute,
  /// Every pair over capacity goes to the overflow block. Not for [engine] overflow (a spillway
  /// holds only replicas): moe dispatch tests, and a spillway that would hold every expert.
  spill,
  /// Next-best expert with room first, what is left to the overflow block. Not for [engine]
  /// overflow, as spill.
  reroute_spill,
};

inline constexpr std::array<std::pair<overflow_policy, std::string_view>, 4> overflow_policy_names{{
    {overflow_policy::keep, "keep"},
    {overflow_policy::reroute, "reroute"},
    {overflow_policy::spill, "spill"},
    {overflow_policy::reroute_spill, "reroute_spill"},
}};

/// The names of config/enum_field.hpp (argument-dependent lookup).
constexpr const auto& enum_names(overflow_policy) { return overflow_policy_names; }

}  // namespace sluice::config
