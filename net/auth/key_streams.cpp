#include "net/auth/key_streams.hpp"

namespace sluice::net::auth {

std::shared_ptr<void> key_streams::enrol(const principal& who, scope needs, std::function<void()> cut) {
  if (who.key_id.empty()) return nullptr;
  uint64_t n = 0;
  {
    std::lock_guard lock(mu_);
    n = next_++;
    by_key_[who.key_id].emplace(n, entry{needs, std::move(cut)});
  }
  // The handle holds the registry weakly: a session may outlive the server's state.
  return std::make_shared<enrolment>(weak_from_this(), who.key_id, n);
}

key_streams::enrolment::~enrolment() {
  if (auto r = registry.lock()) r->leave(id, n);
}

void key_streams::leave(const std::string& id, uint64_t n) {
  std::lock_guard lock(mu_);
  const auto it = by_key_.find(id);
  if (it == by_key_.end()) return;
  it->second.erase(n);
  if (it->second.empty()) by_key_.erase(it);
}

std::size_t key_streams::cut(const std::vector<revocation>& revoked) {
  std::vector<std::function<void()>> cuts;
  {
    std::lock_guard lock(mu_);
    for (const auto& r : revoked) {
      const auto it = by_key_.find(r.id);
      if (it == by_key_.end()) continue;
      for (const auto& [n, e] : it->second)
        if (!r.scopes || !r.scopes->allows(e.needs)) cuts.push_back(e.cut);
    }
  }
  for (auto& c : cuts) c();
  return cuts.size();
}

std::size_t key_streams::open(const std::string& id) const {
  std::lock_guard lock(mu_);
  const auto it = by_key_.find(id);
  return it == by_key_.end() ? 0 : it->second.size();
}

}  // namespace sluice::net::auth
