#include "net/calls/call_registry.hpp"

#include <algorithm>
#include <cstdio>
#include <random>

namespace sluice::net::calls {

namespace {

// Ids must not be guessable from one another (a tenant could probe others' calls): a random
// 64-bit prefix per registry and a counter.
std::string make_prefix() {
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
  return buf;
}

}  // namespace

call_registry::call_registry(std::size_t max_recent_ended)
    : max_recent_ended_(max_recent_ended), prefix_(make_prefix()) {}

call_id call_registry::begin(call_start start) {
  auto rec = std::make_shared<call_record>();
  rec->start = std::move(start);
  rec->began = std::chrono::system_clock::now();
  for (const auto& label : rec->start.channel_labels) rec->channels.push_back(channel_record{label, {}, {}});
  std::lock_guard lock(mu_);
  rec->id = prefix_ + "-" + std::to_string(next_++);
  calls_.push_back(rec);
  return rec->id;
}

void call_registry::result(const call_id& id, int channel, const actors::transcript_event& ev) {
  std::lock_guard lock(mu_);
  for (auto& c : calls_) {
    if (c->id != id) continue;
    if (!c->live || channel < 0 || channel >= static_cast<int>(c->channels.size())) return;
    auto& ch = c->channels[static_cast<std::size_t>(channel)];
    if (ev.is_final) {
      ch.finals.push_back(ev);
      ch.partial.clear();
    } else {
      ch.partial = ev.text;
    }
    return;
  }
}

void call_registry::event(const call_id& id, call_event ev) {
  std::lock_guard lock(mu_);
  for (auto& c : calls_)
    if (c->id == id && c->live) {
      c->events.push_back(std::move(ev));
      return;
    }
}

void call_registry::update_metadata(const call_id& id, const nlohmann::json& metadata) {
  if (!metadata.is_object()) return;
  std::lock_guard lock(mu_);
  for (auto& c : calls_)
    if (c->id == id) {
      c->start.metadata.update(metadata);
      return;
    }
}

void call_registry::end(const call_id& id, std::string reason) {
  std::lock_guard lock(mu_);
  for (auto& c : calls_)
    if (c->id == id && c->live) {
      c->live = false;
      c->ended = std::chrono::system_clock::now();
      c->end_reason = std::move(reason);
      break;
    }
  // Evict the oldest ended calls past the bound.
  std::size_t ended = std::count_if(calls_.begin(), calls_.end(), [](const auto& c) { return !c->live; });
  for (auto it = calls_.begin(); ended > max_recent_ended_ && it != calls_.end();) {
    if (!(*it)->live) {
      it = calls_.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

std::optional<call_record> call_registry::get(const call_id& id) const {
  std::lock_guard lock(mu_);
  for (const auto& c : calls_)
    if (c->id == id) return *c;
  return std::nullopt;
}

std::vector<call_record> call_registry::list() const {
  std::lock_guard lock(mu_);
  std::vector<call_record> out;
  out.reserve(calls_.size());
  for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) out.push_back(**it);
  return out;
}

}  // namespace sluice::net::calls
