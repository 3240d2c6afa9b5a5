#include "moe/placement/placement_plan.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sluice::moe {

namespace {

// Lanes worth running on `d`: the measured speed-up with all units busy, to the nearest lane.
int lanes_for(const device_speed& d) {
  const double speedup = d.speed_all / d.speed_one;
  return std::clamp(static_cast<int>(std::lround(speedup)), 1, d.units);
}

// `total` items split over `weights` in proportion: floors, then the rest one each by largest
// remainder (the lower index on a tie); then every weight that got none, while total allows,
// takes one from the one holding most.
std::vector<int32_t> split_in_proportion(int32_t total, const std::vector<double>& weights) {
  const std::size_t n = weights.size();
  std::vector<int32_t> out(n, 0);
  if (total <= 0 || n == 0) return out;
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> remainder(n);
  int32_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double exact = total * weights[i] / sum;
    out[i] = static_cast<int32_t>(std::floor(exact));
    remainder[i] = exact - std::floor(exact);
    given += out[i];
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t k = 0; given < total; ++k, ++given) ++out[order[k % n]];
  if (total >= static_cast<int32_t>(n))
    for (auto& o : out)
      if (o == 0) {
        --*std::max_element(out.begin(), out.end());
        o = 1;
      }
  return out;
}

}  // namespace

result<placement_plan> plan_placement(const std::vector<device_speed>& devices, int32_t n_routed) {
  if (devices.empty()) return fail(errc::invalid_argument, "placement: no device to place lanes on");
  for (const auto& d : devices) {
    if (d.units < 1)
      return fail(errc::invalid_argument, "placement: device " + d.name + " has " + std::to_string(d.units) + " units");
    if (!std::isfinite(d.speed_one) || !std::isfinite(d.speed_all) || d.speed_one <= 0 || d.speed_all <= 0)
      return fail(errc::invalid_argument, "placement: device " + d.name + " has no measured speed");
  }
  placement_plan plan;
  plan.devices = devices;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int k = lanes_for(devices[i]);
    plan.lanes_per_device.push_back(k);
    for (int j = 0; j < k; ++j)
      plan.lanes.push_back({static_cast<int>(i), 0.0, devices[i].speed_all / k});
  }
  for (const auto& l : plan.lanes) plan.total_speed += l.speed;
  plan.device_share.assign(devices.size(), 0.0);
  for (auto& l : plan.lanes) {
    l.share = l.speed / plan.total_speed;
    plan.device_share[static_cast<std::size_t>(l.device)] += l.share;
  }
  plan.experts_local = devices.size() == 1;
  plan.experts_per_device = plan.experts_local ? std::vector<int32_t>{n_routed}
                                               : split_in_proportion(n_routed, plan.device_share);
  return plan;
}

}  // namespace sluice::moe
