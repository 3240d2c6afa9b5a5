#pragma once
/// The key store of a keys file, reloaded without a restart ([auth] keys_file,
/// keys_reload_check_s; SIGHUP in `sluice serve`).
///
/// current() is the store a NEW request, upgrade or connection is checked against. reload()
/// reads the file again and, when it parses, swaps the new store in. A request already admitted
/// is not checked again here; the reload's outcome lists the keys whose open connections must
/// end (`revoked`), and on_revoked() hands them to whoever ends them (the server's
/// key_streams, [auth] revoke_open_streams).
/// A failed reload (unreadable file, a malformed line, a repeated id) keeps the store in force,
/// logs why at error level and returns it. A file that parses with no keys is a valid reload
/// (revoking the last key must take effect): every request that needs a key is then refused.
/// Logs name the file, counts and key ids (public, see key_store.hpp), never a key or a hash.
///
/// Thread safety: every member may be called from any thread. The current store is a
/// shared_ptr swapped under a mutex held only to copy or replace the pointer; the hashing of
/// authenticate() runs on the caller's copy, outside any lock. Reloads are serialised among
/// themselves (a timed check and SIGHUP at once cannot swap an older read in over a newer one)
/// by a second mutex that requests never take.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <vector>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "config/error.hpp"
#include "net/auth/key_store.hpp"
#include "net/auth/key_streams.hpp"

namespace sluice::net::auth {

class live_key_store {
 public:
  /// What a successful reload changed.
  struct reload_outcome {
    std::size_t keys = 0;     ///< keys in force now
    std::size_t added = 0;    ///< ids new in the file
    std::size_t removed = 0;  ///< ids gone from the file (revoked)
    std::size_t changed = 0;  ///< ids still there whose tenant, scopes, salt or hash differ
    /// Keys whose open connections end: every removed id and every id whose secret (salt or
    /// hash) or tenant changed (scopes nullopt), and ids that lost a scope (their new scopes).
    std::vector<key_streams::revocation> revoked;
  };

  /// Called after each reload that revoked something, on the reloading thread, with the
  /// revocations (outside the store's locks but inside the reload's serialisation).
  void on_revoked(std::function<void(const std::vector<key_streams::revocation>&)> f);

  /// Loads `path` once; fails as key_store::load does.
  static result<std::shared_ptr<live_key_store>> open(std::string path);

  /// The store for a new request (never null).
  std::shared_ptr<const key_store> current() const;

  /// Reads the file again and, when it parses, serves it to new requests. On failure the
  /// previous store stays and the error (also logged) says why.
  result<reload_outcome> reload();

  /// reload() when the file's modification time, size or inode differ from those of the last
  /// attempt (a broken file is reported once, not at every check); nullopt when unchanged.
  std::optional<result<reload_outcome>> reload_if_changed();

  const std::string& path() const { return path_; }

 private:
  struct stamp {
    std::timespec mtime{};
    off_t size = -1;
    ino_t inode = 0;
    bool operator==(const stamp& o) const {
      return mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size && inode == o.inode;
    }
  };
  static stamp stamp_of(const std::string& path);  // all zero (size -1) when the file cannot be stat'ed
  result<reload_outcome> reload_locked();           // reload_mutex_ held

  explicit live_key_store(std::string path) : path_(std::move(path)) {}
  const std::string path_;
  mutable std::mutex current_mutex_;  // guards current_ only
  std::shared_ptr<const key_store> current_;
  std::mutex reload_mutex_;  // serialises reloads; guards stamp_
  stamp stamp_;              // of the last attempt
  std::function<void(const std::vector<key_streams::revocation>&)> on_revoked_;  // guarded by reload_mutex_
};

}  // namespace sluice::net::auth
