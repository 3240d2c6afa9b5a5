#include "net/auth/live_key_store.hpp"

#include <sys/stat.h>

#include <spdlog/spdlog.h>

namespace sluice::net::auth {

namespace {

bool same_record(const key_record& a, const key_record& b) {
  return a.tenant == b.tenant && a.scopes == b.scopes && a.salt == b.salt && a.hash == b.hash;
}

}  // namespace

result<std::shared_ptr<live_key_store>> live_key_store::open(std::string path) {
  std::shared_ptr<live_key_store> s(new live_key_store(std::move(path)));
  // Stamped before reading: a change made while it is read is seen by the next check.
  s->stamp_ = stamp_of(s->path_);
  auto keys = key_store::load(s->path_);
  if (!keys) return tl::unexpected(keys.error());
  s->current_ = std::make_shared<const key_store>(std::move(*keys));
  return s;
}

std::shared_ptr<const key_store> live_key_store::current() const {
  std::lock_guard lock(current_mutex_);
  return current_;
}

result<live_key_store::reload_outcome> live_key_store::reload() {
  std::lock_guard lock(reload_mutex_);
  stamp_ = stamp_of(path_);
  return reload_locked();
}

std::optional<result<live_key_store::reload_outcome>> live_key_store::reload_if_changed() {
  std::lock_guard lock(reload_mutex_);
  const auto now = stamp_of(path_);
  if (now == stamp_) return std::nullopt;
  stamp_ = now;
  return reload_locked();
}

result<live_key_store::reload_outcome> live_key_store::reload_locked() {
  // Read and parsed outside current_mutex_: requests go on with the previous store meanwhile.
  auto loaded = key_store::load(path_);
  const auto before = current();
  if (!loaded) {
    spdlog::error("auth: reloading the keys file failed, the previous {} key(s) stay in force: {}", before->size(),
                  loaded.error().message);
    return tl::unexpected(loaded.error());
  }
  auto next = std::make_shared<const key_store>(std::move(*loaded));
  reload_outcome out;
  out.keys = next->size();
  for (const auto& [id, r] : next->records()) {
    const auto old = before->records().find(id);
    if (old == before->records().end()) {
      ++out.added;
    } else if (!same_record(old->second, r)) {
      ++out.changed;
      const auto& o = old->second;
      if (o.salt != r.salt || o.hash != r.hash || o.tenant != r.tenant)
        out.revoked.push_back({id, std::nullopt});
      else if (o.scopes != r.scopes)
        out.revoked.push_back({id, r.scopes});
    }
  }
  for (const auto& [id, r] : before->records())
    if (!next->records().count(id)) {
      ++out.removed;
      out.revoked.push_back({id, std::nullopt});
      spdlog::info("auth: key {} (tenant {}) revoked: new requests with it are refused", id, r.tenant);
    }
  {
    std::lock_guard lock(current_mutex_);
    current_ = std::move(next);
  }
  spdlog::info("auth: reloaded {}: {} key(s) ({} added, {} removed, {} changed) for new requests", path_, out.keys,
               out.added, out.removed, out.changed);
  if (out.keys == 0) spdlog::warn("auth: {} now holds no keys: every request that needs a key is refused", path_);
  if (!out.revoked.empty() && on_revoked_) on_revoked_(out.revoked);
  return out;
}

void live_key_store::on_revoked(std::function<void(const std::vector<key_streams::revocation>&)> f) {
  std::lock_guard lock(reload_mutex_);
  on_revoked_ = std::move(f);
}

live_key_store::stamp live_key_store::stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  stamp s;
  s.mtime = st.st_mtim;
  s.size = st.st_size;
  s.inode = st.st_ino;
  return s;
}

}  // namespace sluice::net::auth
