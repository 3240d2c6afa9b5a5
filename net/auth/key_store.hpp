#pragma once
/// API keys, hashed at rest. A key is `sk_<id>_<secret>`: a public id of 16 hex digits (names
/// the key in files and logs, finds its record) and a secret of 64 hex digits (32 bytes from
/// OpenSSL's RAND_bytes). The keys file holds one record per line,
///   <id> <tenant> <scopes> <salt> <hash>
/// where salt is 16 random bytes and hash = SHA-256(salt || key), both hex; `#` starts a comment.
/// A plain salted SHA-256 is enough here (no slow password hash): the secret is 256 random bits,
/// not a password that could be guessed. The key itself is never stored or logged.
///
/// Thread safety: a loaded key_store is immutable; authenticate() may be called from any thread.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/error.hpp"
#include "net/auth/principal.hpp"

namespace sluice::net::auth {

inline constexpr std::size_t key_id_bytes = 8;
inline constexpr std::size_t key_secret_bytes = 32;
inline constexpr std::size_t key_salt_bytes = 16;
inline constexpr std::size_t key_hash_bytes = 32;  ///< SHA-256

struct key_record {
  std::string id;  ///< 16 hex digits
  std::string tenant;
  scope_set scopes;
  std::array<uint8_t, key_salt_bytes> salt{};
  std::array<uint8_t, key_hash_bytes> hash{};  ///< SHA-256(salt || key)
};

/// A freshly made key: `key` is shown to its owner once; only `record` is kept.
struct new_key {
  std::string key;
  key_record record;
};

/// A new random key for `tenant` with `scopes`. errc::invalid_argument for a bad tenant name or
/// no scopes; errc::internal when OpenSSL has no randomness.
result<new_key> make_key(const std::string& tenant, scope_set scopes);

/// The record's line in the keys file (no newline).
std::string format_record(const key_record& r);

/// Appends `r` to the keys file at `path`, creating it readable by its owner only.
/// errc::io when it cannot be written.
result<void> append_record(const std::string& path, const key_record& r);

class key_store {
 public:
  /// Reads the keys file (see above). errc::io when unreadable; errc::corrupt naming the file,
  /// line and problem (bad field, unknown scope, repeated id).
  static result<key_store> load(const std::string& path);
  /// The same from text; `source` names it in messages.
  static result<key_store> parse(std::string_view text, std::string_view source);

  /// The key's principal when `presented` is a key of this store; nullopt otherwise. The hash
  /// comparison takes the same time wherever the first differing byte is.
  std::optional<principal> authenticate(std::string_view presented) const;

  std::size_t size() const { return by_id_.size(); }
  /// Records in id order (for `sluice keys list`).
  const std::map<std::string, key_record>& records() const { return by_id_; }

 private:
  std::map<std::string, key_record> by_id_;
};

}  // namespace sluice::net::auth
