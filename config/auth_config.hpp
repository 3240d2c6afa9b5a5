#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [auth]: who may use `sluice serve` (net/auth/). With no keys file the server serves anyone
/// who reaches it, which it allows only on a loopback address unless allow_insecure_public.
struct auth_config {
  /// API keys file written by `sluice keys add` (one hashed key per line); empty: no keys.
  std::string keys_file;
  /// /metrics without a key (for a Prometheus scraper); every other route still needs one.
  bool metrics_open = false;
  /// Serve on a non-loopback address without keys (anyone who reaches the port may stream and
  /// read every transcript); without it such a server refuses to start.
  bool allow_insecure_public = false;

  template <class V>
  void visit(V&& v) {
    v("keys_file", keys_file, any_string{}, "API keys file (sluice keys add); empty: no keys");
    v("metrics_open", metrics_open, any_bool{}, "serve /metrics without a key (Prometheus)");
    v("allow_insecure_public", allow_insecure_public, any_bool{},
      "serve a non-loopback address without keys (anyone may stream and read transcripts)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
