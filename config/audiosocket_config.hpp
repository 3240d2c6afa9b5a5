#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [audiosocket]: the Asterisk AudioSocket TCP listener (net/switches/audiosocket_listener.hpp).
/// Asterisk's AudioSocket() dialplan application (and the AudioSocket channel driver) connects
/// here and streams one call per connection. The protocol has no authentication: bind it only
/// where only your Asterisk servers reach it, or name them in `allowed_sources`; its calls
/// belong to the tenant `tenant_sources` gives their address, else to `tenant`.
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
  /// The tenant that owns these calls (net/auth) when `tenant_sources` names none; empty: none.
  std::string tenant;
  /// Who may connect: IP addresses and networks, comma-separated ("10.0.0.0/8, 192.0.2.7");
  /// a connection from elsewhere gets an error message and is closed. Empty: anyone who
  /// reaches the port.
  std::string allowed_sources;
  /// Listen on a non-loopback address with no `allowed_sources`, although the protocol has no
  /// authentication.
  bool allow_public = false;
  /// Whose calls come from where, as sip.tenant_sources: "acme: 10.1.0.0/16, 192.0.2.7;
  /// globex: 10.2.0.0/16" (net/source_filter.hpp); other addresses' calls are `tenant`'s.
  std::string tenant_sources;

  template <class V>
  void visit(V&& v) {
    v("enabled", enabled, any_bool{}, "listen for Asterisk AudioSocket connections");
    v("host", host, non_empty{}, "address to listen on");
    v("port", port, range{0, 65535}, "TCP port (0: any free port)");
    v("max_connections", max_connections, range{1, 1000000}, "calls at once");
    v("idle_timeout_s", idle_timeout_s, range{1, 86400}, "end a call silent this long (s)");
    v("max_call_s", max_call_s, range{1, 7 * 86400}, "longest call (s)");
    v("tenant", tenant, any_string{}, "tenant owning calls from addresses in no tenant_sources list; empty: none");
    v("allowed_sources", allowed_sources, any_string{}, "IP addresses and networks that may connect; empty: anyone");
    v("allow_public", allow_public, any_bool{},
      "listen on a non-loopback address with no allowed_sources (AudioSocket has no authentication)");
    v("tenant_sources", tenant_sources, any_string{},
      "per tenant, the addresses its calls come from: \"acme: 10.1.0.0/16, 192.0.2.7; globex: 10.2.0.0/16\"");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
