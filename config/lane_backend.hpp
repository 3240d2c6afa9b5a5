#pragma once
/// Where a lane runs its utterances' model steps ([engine] lane_backend).

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace sluice::config {

enum class lane_backend : uint8_t {
  /// The lane's own CPU forward (moe::micro_batch and local experts): the default.
  cpu,
  /// The device forward (moe::device_model: one table of device ops, caches per stream) on the
  /// CPU backend: the same numbers as cpu, through the code a GPU lane runs (tests, comparison).
  device_cpu,
  /// The device forward on a CUDA GPU: lane i on GPU i mod the GPUs visible; the engine refuses
  /// to start when none can be used.
  cuda,
};

inline constexpr std::array<std::pair<lane_backend, std::string_view>, 3> lane_backend_names{{
    {lane_backend::cpu, "cpu"},
    {lane_backend::device_cpu, "device_cpu"},
    {lane_backend::cuda, "cuda"},
}};

/// The names of config/enum_field.hpp (argument-dependent lookup).
constexpr const auto& enum_names(lane_backend) { return lane_backend_names; }

}  // namespace sluice::config
