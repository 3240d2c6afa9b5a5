#include "actors/lane_set.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::actors {

namespace {

// Relative speeds, fastest 1; all 1 unless `speeds` is one usable figure per slot.
std::vector<double> relative_speeds(std::size_t n, const std::vector<double>& speeds) {
  std::vector<double> out(n, 1.0);
  if (speeds.size() != n) return out;
  if (!std::all_of(speeds.begin(), speeds.end(), [](double v) { return std::isfinite(v) && v > 0; })) return out;
  const double top = *std::max_element(speeds.begin(), speeds.end());
  for (std::size_t i = 0; i < n; ++i) out[i] = speeds[i] / top;
  return out;
}

}  // namespace

lane_set::lane_set(std::size_t lanes, bool decodes, std::vector<double> speeds)
    : n_(lanes == 0 ? 1 : lanes),
      decodes_(decodes),
      speed_(relative_speeds(n_, speeds)),
      load_(std::make_unique<std::atomic<int64_t>[]>(n_)),
      lanes_(n_) {
  for (std::size_t i = 0; i < n_; ++i) load_[i].store(0, std::memory_order_relaxed);
}

std::shared_ptr<lane_set> lane_set::of(compute_actor_type compute) {
  auto s = std::make_shared<lane_set>(1);
  s->set(0, std::move(compute));
  return s;
}

lane_set::placement lane_set::place(int64_t frames) {
  // Finish times compared as (load + frames) / speed; with equal speeds this is the least load.
  auto finish = [&](std::size_t i) {
    return static_cast<double>(load_[i].load(std::memory_order_relaxed) + frames) / speed_[i];
  };
  std::size_t best = 0;
  double best_finish = finish(0);
  for (std::size_t i = 1; i < n_; ++i) {
    const double f = finish(i);
    if (f < best_finish) {
      best = i;
      best_finish = f;
    }
  }
  load_[best].fetch_add(frames, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  return {best, lanes_[best]};
}

void lane_set::add(std::size_t index, int64_t frames) {
  if (index >= n_) return;
  load_[index].fetch_add(frames, std::memory_order_relaxed);
}

bool lane_set::set(std::size_t index, compute_actor_type compute) {
  if (index >= n_) return false;
  std::lock_guard<std::mutex> lock(mu_);
  lanes_[index] = std::move(compute);
  return true;
}

compute_actor_type lane_set::at(std::size_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index < n_ ? lanes_[index] : compute_actor_type{};
}

int64_t lane_set::load(std::size_t index) const {
  return index < n_ ? load_[index].load(std::memory_order_relaxed) : 0;
}

}  // namespace sluice::actors
