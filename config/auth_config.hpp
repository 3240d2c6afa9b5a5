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
  /// Failed-authentication back-off (net/auth/failure_limiter.hpp): after max_failures invalid
  /// keys from one IP address within failure_window_s, that address gets 429 for lockout_s.
  /// 0 turns it off.
  int max_failures = 10;
  int failure_window_s = 60;
  int lockout_s = 300;
  /// Client addresses the back-off remembers at most (its memory bound).
  int max_tracked_clients = 100000;
  /// Check keys_file's modification time, size and inode this often (s) and reload it when
  /// they change (net/auth/live_key_store.hpp); 0: only on SIGHUP. A reload applies to new
  /// requests and upgrades; open connections follow revoke_open_streams.
  int keys_reload_check_s = 2;
  /// A reload that removes a key, changes its secret or tenant, or takes away a scope ends the
  /// connections open with it (WebSocket streams, switch calls and /v1/events: an error
  /// naming key_revoked where the protocol has one, close 1008; RTSP pushes disconnected);
  /// false: they go on to their end.
  bool revoke_open_streams = true;

  template <class V>
  void visit(V&& v) {
    v("keys_file", keys_file, any_string{}, "API keys file (sluice keys add); empty: no keys");
    v("metrics_open", metrics_open, any_bool{}, "serve /metrics without a key (Prometheus)");
    v("allow_insecure_public", allow_insecure_public, any_bool{},
      "serve a non-loopback address without keys (anyone may stream and read transcripts)");
    v("max_failures", max_failures, range{0, 1000000}, "invalid keys from one IP before it is locked out (0: off)");
    v("failure_window_s", failure_window_s, range{1, 86400}, "window in which max_failures count (s)");
    v("lockout_s", lockout_s, range{1, 86400}, "how long a locked-out IP gets 429 (s)");
    v("max_tracked_clients", max_tracked_clients, range{1, 10000000}, "client IPs the back-off remembers at most");
    v("keys_reload_check_s", keys_reload_check_s, range{0, 86400},
      "check keys_file for a change this often (s) and reload it; 0: only on SIGHUP");
    v("revoke_open_streams", revoke_open_streams, any_bool{},
      "a reload that revokes a key also ends the streams open with it");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
