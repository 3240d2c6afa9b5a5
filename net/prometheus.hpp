#pragma once
/// The metrics snapshot (actors/metrics_actor.hpp JSON) in the Prometheus text exposition
/// format 0.0.4: counters per kind, gauges per actor, latency histograms with cumulative
/// buckets, _sum and _count.

#include <string>

namespace sluice::net {

/// Empty input or bad JSON gives only the sluice_up gauge at 0.
std::string to_prometheus(const std::string& snapshot_json);

}  // namespace sluice::net
