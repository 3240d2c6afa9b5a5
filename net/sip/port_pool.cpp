#include "net/sip/port_pool.hpp"

namespace sluice::net::sip {

port_pool::port_pool(int min_port, int max_port) {
  first_ = min_port + (min_port % 2);
  // Even ports whose RTCP port (port + 1) is still in range.
  const int count = max_port > first_ ? (max_port - first_ + 1) / 2 : 0;
  in_use_.assign(static_cast<std::size_t>(count), false);
}

std::optional<uint16_t> port_pool::acquire() {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < in_use_.size(); ++i) {
    const std::size_t k = (next_ + i) % in_use_.size();
    if (in_use_[k]) continue;
    in_use_[k] = true;
    ++used_;
    next_ = (k + 1) % in_use_.size();
    return static_cast<uint16_t>(first_ + 2 * static_cast<int>(k));
  }
  return std::nullopt;
}

void port_pool::release(uint16_t port) {
  std::lock_guard lock(mu_);
  const int k = (port - first_) / 2;
  if (port < first_ || (port - first_) % 2 || k >= static_cast<int>(in_use_.size()) || !in_use_[k]) return;
  in_use_[k] = false;
  --used_;
}

std::size_t port_pool::in_use() const {
  std::lock_guard lock(mu_);
  return used_;
}

}  // namespace sluice::net::sip
