#pragma once
/// The long-lived connections opened with each API key (WebSocket streams of every protocol,
/// switch calls, /v1/events subscriptions, RTSP pushes), so that revoking a key ends them too
/// ([auth] revoke_open_streams): a reload of the keys file that removes a key, changes its
/// secret or tenant, or takes away the scope the connection needed calls each one's `cut`.
///
/// A session enrols when it is admitted and keeps the returned handle; dropping the handle (the
/// session ends) leaves. `cut` runs on the thread of the reload, outside this registry's lock:
/// it must only post the session's end to its own executor, never block or end it in place.
///
/// Thread-safe: enrol, leave and cut may race from any threads; a cut that races a session's
/// end calls a `cut` whose session is gone, which posting through a weak pointer makes harmless.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/auth/principal.hpp"

namespace sluice::net::auth {

class key_streams : public std::enable_shared_from_this<key_streams> {
 public:
  /// Registers `cut` for a connection admitted with `who`'s key for `needs`; the connection
  /// stays registered while the returned handle lives. Null (nothing registered) for the
  /// anonymous principal of a server without keys.
  std::shared_ptr<void> enrol(const principal& who, scope needs, std::function<void()> cut);

  /// What a reload revoked: every connection of the key `id` ends.
  struct revocation {
    std::string id;
    /// nullopt: the key is gone (or its secret or tenant changed); otherwise its new scopes,
    /// and only connections that needed a scope no longer held end.
    std::optional<scope_set> scopes;
  };
  /// Calls `cut` of every connection these revocations end; how many.
  std::size_t cut(const std::vector<revocation>& revoked);

  /// Connections registered under key `id` (tests, logs).
  std::size_t open(const std::string& id) const;

 private:
  struct enrolment {
    enrolment(std::weak_ptr<key_streams> r, std::string i, uint64_t k) : registry(std::move(r)), id(std::move(i)), n(k) {}
    ~enrolment();
    enrolment(const enrolment&) = delete;
    enrolment& operator=(const enrolment&) = delete;
    std::weak_ptr<key_streams> registry;
    std::string id;
    uint64_t n;
  };
  struct entry {
    scope needs;
    std::function<void()> cut;
  };
  void leave(const std::string& id, uint64_t n);
  mutable std::mutex mu_;
  uint64_t next_ = 0;
  std::map<std::string, std::map<uint64_t, entry>> by_key_;
};

}  // namespace sluice::net::auth
