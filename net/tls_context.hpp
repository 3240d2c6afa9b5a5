#pragma once
/// The server's TLS context ([server] tls_cert_file, tls_key_file, tls_min_version), and its
/// reload without a restart.
///
/// load() builds a fresh boost::asio::ssl::context from the two PEM files and checks them:
/// each must exist and be readable, the chain must parse, the key must match the certificate.
/// current() is what a NEW connection takes its TLS state from; swapping in a new context never
/// touches connections already open (each holds its own SSL object, which holds a reference to
/// the OpenSSL SSL_CTX it was made from), so they keep their certificate until they close.
/// A failed reload keeps the context in use and says why.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "config/error.hpp"
#include "config/server_config.hpp"

namespace sluice::net {

/// Builds a server context from [server]'s TLS fields (which must name both files).
/// errc::io for a missing or unreadable file, errc::invalid_config for a file that is not a usable
/// certificate chain or key, or a key that does not match the certificate.
result<std::shared_ptr<boost::asio::ssl::context>> load_tls_context(const config::server_config& cfg);

/// The SHA-256 fingerprint (lower-case hex) of the leaf certificate a context serves.
std::string tls_fingerprint(const boost::asio::ssl::context& ctx);

/// The current context, swapped under a lock; thread-safe.
class tls_context_store {
 public:
  /// Loads the files once; fails as load_tls_context does.
  static result<std::unique_ptr<tls_context_store>> create(const config::server_config& cfg);

  /// The context for a new connection (never null).
  std::shared_ptr<boost::asio::ssl::context> current() const;

  /// Reads the files again and, when they load, serves them to new connections. On failure the
  /// old context stays and the error says why.
  result<void> reload();

  /// reload() when either file's modification time or size differs from the last load (or
  /// the last failed attempt, so a broken file is reported once, not at every check).
  /// Returns true when a reload was attempted.
  bool reload_if_changed();

 private:
  struct stamp {
    std::filesystem::file_time_type mtime{};
    std::uintmax_t size = 0;
    bool operator==(const stamp&) const = default;
  };
  static stamp stamp_of(const std::string& path);

  explicit tls_context_store(config::server_config cfg) : cfg_(std::move(cfg)) {}
  config::server_config cfg_;
  mutable std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;
  stamp cert_stamp_, key_stamp_;  // of the last attempt
};

}  // namespace sluice::net
