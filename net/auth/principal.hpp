#pragma once
/// Who a request comes from, once authenticated: a tenant and the scopes of its key.
///
/// Scopes: stream (open WebSocket streams, POST /v1/transcribe), read (/v1/actors and the
/// dashboard: the tenant's own streams and totals only), metrics (/metrics, and the engine's
/// figures and every tenant's totals in /v1/actors: the operator's monitoring scope, no
/// transcript text), admin (every scope, and every tenant's streams). A server without keys serves everyone as the anonymous principal, which
/// holds every scope (net/auth/gate.hpp says when that is allowed).

#include <cstdint>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace sluice::net::auth {

enum class scope : uint8_t { stream = 1, read = 2, metrics = 4, admin = 8 };

/// A set of scopes; admin implies every other.
class scope_set {
 public:
  scope_set() = default;
  static scope_set all() { return scope_set(all_bits); }
  /// "stream,read" (comma-separated, no spaces, at least one); errc::invalid_argument naming
  /// an unknown or repeated scope.
  static result<scope_set> parse(std::string_view text);

  void add(scope s) { bits_ |= static_cast<uint8_t>(s); }
  /// True when `s` is in the set or the set holds admin.
  bool allows(scope s) const { return (bits_ & (static_cast<uint8_t>(s) | static_cast<uint8_t>(scope::admin))) != 0; }
  bool empty() const { return bits_ == 0; }
  /// "stream,read" in a fixed order (parse() reads it back).
  std::string to_string() const;
  bool operator==(const scope_set&) const = default;

 private:
  static constexpr uint8_t all_bits = 15;
  explicit scope_set(uint8_t bits) : bits_(bits) {}
  uint8_t bits_ = 0;
};

/// "stream", "read", "metrics", "admin".
const char* to_string(scope s);

struct principal {
  std::string tenant;  ///< empty for the anonymous principal
  std::string key_id;  ///< the key's public id (safe to log); empty for anonymous
  scope_set scopes;

  bool allows(scope s) const { return scopes.allows(s); }
  /// Admin keys and the anonymous principal see every tenant's streams.
  bool sees_every_tenant() const { return scopes.allows(scope::admin); }
  /// Everyone, when no keys are configured.
  static principal anonymous() { return principal{{}, {}, scope_set::all()}; }
  /// A request to a route that needs no key (/healthz) on a server with keys: no scopes.
  static principal unauthenticated() { return principal{}; }
};

/// Tenant names: 1..64 of [A-Za-z0-9._-] (they appear in files and snapshots unquoted).
bool valid_tenant(std::string_view tenant);
/// The rule above, as errors about a tenant name say it.
inline constexpr std::string_view tenant_rule = "use 1 to 64 of A-Z a-z 0-9 . _ -";

}  // namespace sluice::net::auth
