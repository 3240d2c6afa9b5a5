#pragma once
/// Which browsers and host names may use the server: the Host header check (against DNS
/// rebinding: a page on evil.example whose name is made to resolve to 127.0.0.1) and the
/// Origin allow-list (against any web page opening a WebSocket or posting audio to a server
/// on the visitor's machine). Pure: headers in, a verdict out. See [server] allowed_hosts and
/// allowed_origins in config/sluice.toml.

#include <string>
#include <string_view>
#include <vector>

#include "config/server_config.hpp"

namespace sluice::net {

class request_policy {
 public:
  explicit request_policy(const config::server_config& cfg);

  /// Empty when a request with these headers may be served; otherwise why not (for a 403).
  /// An absent header is empty: no Host (HTTP/1.0) is allowed, no Origin means no browser.
  std::string refusal(std::string_view host_header, std::string_view origin_header) const;

 private:
  bool host_allowed(const std::string& host) const;

  std::string bound_;  ///< [server] host, lower case
  bool bound_any_ = false;
  std::vector<std::string> hosts_, origins_;
  bool any_host_ = false, any_origin_ = false;
};

/// The host part of a Host header or of an Origin's authority, lower case, without the port
/// and without the brackets of an IPv6 literal ("[::1]:8080" -> "::1").
std::string host_of(std::string_view authority);

}  // namespace sluice::net
