#include "actors/lane_set.hpp"

namespace sluice::actors {

lane_set::lane_set(std::size_t lanes, bool decodes)
    : n_(lanes == 0 ? 1 : lanes), decodes_(decodes), load_(std::make_unique<std::atomic<int64_t>[]>(n_)), lanes_(n_) {
  for (std::size_t i = 0; i < n_; ++i) load_[i].store(0, std::memory_order_relaxed);
}

std::shared_ptr<lane_set> lane_set::of(compute_actor_type compute) {
  auto s = std::make_shared<lane_set>(1);
  s->set(0, std::move(compute));
  return s;
}

lane_set::placement lane_set::place(int64_t frames) {
  std::size_t best = 0;
  int64_t best_load = load_[0].load(std::memory_order_relaxed);
  for (std::size_t i = 1; i < n_; ++i) {
    const int64_t l = load_[i].load(std::memory_order_relaxed);
    if (l < best_load) {
      best = i;
      best_load = l;
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
