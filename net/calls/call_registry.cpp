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

call_registry::call_registry(std::size_t max_recent_ended, std::size_t max_events_per_call)
    : max_recent_ended_(max_recent_ended), max_events_per_call_(max_events_per_call), prefix_(make_prefix()) {}

bool call_registry::anyone_wants_locked(update_kind kind, const call_record& c) const {
  return std::any_of(subs_.begin(), subs_.end(),
                     [&](const auto& s) { return s->wants(kind, c.id, c.start.tenant); });
}

void call_registry::publish_locked(const call_update& u, std::vector<std::shared_ptr<subscription>>& to_wake) {
  for (auto it = subs_.begin(); it != subs_.end();) {
    auto& s = *it;
    if (s->cancelled()) {
      it = subs_.erase(it);
      continue;
    }
    if (s->wants(u.kind, u.id, u.tenant) && s->offer(u)) {
      to_wake.push_back(s);
      if (s->dropped()) {
        ++subscribers_dropped_;
        it = subs_.erase(it);
        continue;
      }
    }
    ++it;
  }
}

void call_registry::wake_all(const std::vector<std::shared_ptr<subscription>>& subs) {
  for (const auto& s : subs) s->wake();
}

call_id call_registry::begin(call_start start) {
  auto rec = std::make_shared<call_record>();
  rec->start = std::move(start);
  rec->began = std::chrono::system_clock::now();
  for (const auto& label : rec->start.channel_labels) rec->channels.push_back(channel_record{label, {}, {}});
  std::vector<std::shared_ptr<subscription>> wake;
  call_id id;
  {
    std::lock_guard lock(mu_);
    rec->id = prefix_ + "-" + std::to_string(next_++);
    id = rec->id;
    calls_[id] = entry{rec, next_order_++};
    if (anyone_wants_locked(update_kind::call_start, *rec)) {
      call_update u;
      u.kind = update_kind::call_start;
      u.id = id;
      u.tenant = rec->start.tenant;
      u.call = std::make_shared<const call_record>(*rec);
      publish_locked(u, wake);
    }
  }
  wake_all(wake);
  return id;
}

void call_registry::result(const call_id& id, int channel, const actors::transcript_event& ev) {
  std::vector<std::shared_ptr<subscription>> wake;
  {
    std::lock_guard lock(mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    auto& c = *it->second.rec;
    if (!c.live || channel < 0 || channel >= static_cast<int>(c.channels.size())) return;
    auto& ch = c.channels[static_cast<std::size_t>(channel)];
    if (ev.is_final) {
      ch.finals.push_back(ev);
      ch.partial.clear();
    } else {
      ch.partial = ev.text;
    }
    const auto kind = ev.is_final ? update_kind::final : update_kind::partial;
    if (anyone_wants_locked(kind, c)) {
      call_update u;
      u.kind = kind;
      u.id = id;
      u.tenant = c.start.tenant;
      u.channel = channel;
      u.label = ch.label;
      u.result = ev;
      publish_locked(u, wake);
    }
  }
  wake_all(wake);
}

void call_registry::event(const call_id& id, call_event ev) {
  std::vector<std::shared_ptr<subscription>> wake;
  {
    std::lock_guard lock(mu_);
    auto it = calls_.find(id);
    if (it == calls_.end() || !it->second.rec->live) return;
    auto& c = *it->second.rec;
    if (c.events.size() >= max_events_per_call_) {
      ++c.events_dropped;
      return;
    }
    c.events.push_back(std::move(ev));
    if (anyone_wants_locked(update_kind::event, c)) {
      call_update u;
      u.kind = update_kind::event;
      u.id = id;
      u.tenant = c.start.tenant;
      u.channel = c.events.back().channel;
      u.event = std::make_shared<const call_event>(c.events.back());
      publish_locked(u, wake);
    }
  }
  wake_all(wake);
}

void call_registry::update_metadata(const call_id& id, const nlohmann::json& metadata) {
  if (!metadata.is_object()) return;
  std::vector<std::shared_ptr<subscription>> wake;
  {
    std::lock_guard lock(mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    auto& c = *it->second.rec;
    c.start.metadata.update(metadata);
    if (anyone_wants_locked(update_kind::metadata, c)) {
      call_update u;
      u.kind = update_kind::metadata;
      u.id = id;
      u.tenant = c.start.tenant;
      u.metadata = c.start.metadata;
      publish_locked(u, wake);
    }
  }
  wake_all(wake);
}

void call_registry::end(const call_id& id, std::string reason) {
  std::vector<std::shared_ptr<subscription>> wake;
  {
    std::lock_guard lock(mu_);
    auto it = calls_.find(id);
    if (it == calls_.end() || !it->second.rec->live) return;
    auto& c = *it->second.rec;
    c.live = false;
    c.ended = std::chrono::system_clock::now();
    c.end_reason = std::move(reason);
    c.channels.shrink_to_fit();
    ended_.push_back(id);
    if (anyone_wants_locked(update_kind::call_end, c)) {
      call_update u;
      u.kind = update_kind::call_end;
      u.id = id;
      u.tenant = c.start.tenant;
      // One copy of the whole call, shared by every subscriber (the webhook posts it).
      u.call = std::make_shared<const call_record>(c);
      publish_locked(u, wake);
    }
    evict_locked();
  }
  wake_all(wake);
}

void call_registry::evict_locked() {
  while (ended_.size() > max_recent_ended_) {
    calls_.erase(ended_.front());
    ended_.pop_front();
  }
}

std::optional<call_record> call_registry::get(const call_id& id) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(id);
  if (it == calls_.end()) return std::nullopt;
  return *it->second.rec;
}

std::vector<call_record> call_registry::list() const { return list(query{}); }

std::vector<call_record> call_registry::list(const query& q) const {
  std::lock_guard lock(mu_);
  // Select and order the entries first, then copy only the ones returned.
  std::vector<const entry*> picked;
  picked.reserve(calls_.size());
  for (const auto& [id, e] : calls_) {
    if (q.live_only && !e.rec->live) continue;
    if (q.tenant && e.rec->start.tenant != *q.tenant) continue;
    picked.push_back(&e);
  }
  const std::size_t n = std::min(q.limit, picked.size());
  std::partial_sort(picked.begin(), picked.begin() + static_cast<std::ptrdiff_t>(n), picked.end(),
                    [](const entry* a, const entry* b) { return a->order > b->order; });
  std::vector<call_record> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(*picked[i]->rec);
  return out;
}

std::shared_ptr<subscription> call_registry::subscribe(subscription_filter filter, std::size_t max_queued,
                                                       overflow policy, std::function<void()> wake) {
  auto s = std::make_shared<subscription>(std::move(filter), max_queued, policy, std::move(wake));
  std::lock_guard lock(mu_);
  subs_.push_back(s);
  return s;
}

void call_registry::restore(std::vector<call_record> ended) {
  // Oldest first, so that their list order and eviction order follow the times they began.
  std::sort(ended.begin(), ended.end(), [](const auto& a, const auto& b) { return a.began < b.began; });
  std::lock_guard lock(mu_);
  for (auto& r : ended) {
    if (r.live || r.id.empty() || calls_.count(r.id)) continue;
    auto id = r.id;
    calls_[id] = entry{std::make_shared<call_record>(std::move(r)), next_order_++};
    ended_.push_back(std::move(id));
  }
  evict_locked();
}

call_registry::counts call_registry::stats() const {
  std::lock_guard lock(mu_);
  counts c;
  c.ended = ended_.size();
  c.live = calls_.size() - ended_.size();
  c.subscribers = static_cast<std::size_t>(
      std::count_if(subs_.begin(), subs_.end(), [](const auto& s) { return !s->cancelled(); }));
  c.subscribers_dropped = subscribers_dropped_;
  return c;
}

}  // namespace sluice::net::calls
