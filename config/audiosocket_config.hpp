#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [audiosocket]: the Asterisk AudioSocket TCP listener (net/switches/audiosocket_listener.hpp).
/// Asterisk's AudioSocket() dialplan application (and the AudioSocket channel driver) connects
/// here and streams one call per connection. The protocol has no authentication: bind it only
/// where only your Asterisk servers reach it; its calls belong to `tenant`.
struct audiosocket_config {
  bool enabled = true;
  std::string host = "127.0.0.1";
  /// 9092 is the port Asterisk's documentation and examples use; 0: any free port (tests).
  int port = 9092;
  /// Connections (calls) at once; past it a new one gets an error message and is closed.
  int max_connections = 256;
  /// A call that sends nothing for this long is ended (s). Asterisk sends audio every 20 ms.
  int idle_timeout_s = 30;
  /// Longest call (s); then it is ended as if Asterisk had hung up.
  int max_call_s = 4 * 3600;
  /// The tenant that owns these calls (net/auth); empty: none.
  std::string tenant;
  /// Listen on a non-loopback address although the protocol has no authentication.
  bool allow_public = false;

  template <class V>
  void visit(V&& v) {
    v("enabled", enabled, any_bool{}, "listen for Asterisk AudioSocket connections");
    v("host", host, non_empty{}, "address to listen on");
    v("port", port, range{0, 65535}, "TCP port (0: any free port)");
    v("max_connections", max_connections, range{1, 1000000}, "calls at once");
    v("idle_timeout_s", idle_timeout_s, range{1, 86400}, "end a call silent this long (s)");
    v("max_call_s", max_call_s, range{1, 7 * 86400}, "longest call (s)");
    v("tenant", tenant, any_string{}, "tenant owning the calls; empty: none");
    v("allow_public", allow_public, any_bool{},
      "listen on a non-loopback address (AudioSocket has no authentication)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
