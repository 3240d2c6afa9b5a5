#pragma once
/// Which peers may place calls over a protocol with no credentials of its own (SIP's
/// sip.allowed_sources, AudioSocket's audiosocket.allowed_sources): a list of IP addresses and
/// networks in CIDR form ("10.0.0.0/8, 192.0.2.7, fd00::/8"), as a contact center names its PBXs
/// and SBCs (the way trunks to a recording server are usually secured, rather than Digest
/// passwords). An empty list allows everyone. Pure.

#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include "config/error.hpp"

namespace sluice::net {

class source_filter {
 public:
  /// Parses a comma-separated list; an error names the entry that is not an address or network.
  static result<source_filter> parse(std::string_view list);
  bool empty() const { return v4_.empty() && v6_.empty(); }
  /// Whether `a` is in one of the networks (everyone when empty). An IPv4-mapped IPv6 address
  /// (::ffff:a.b.c.d) is judged as the IPv4 address it carries.
  bool allows(const boost::asio::ip::address& a) const;

 private:
  std::vector<boost::asio::ip::network_v4> v4_;
  std::vector<boost::asio::ip::network_v6> v6_;
};

/// Whose calls come from where (sip.tenant_sources, audiosocket.tenant_sources): "acme:
/// 10.1.0.0/16, 192.0.2.7; globex: 10.2.0.0/16", tenants separated by ';', each with its caller
/// addresses and networks as in source_filter. A call belongs to the first tenant whose list
/// holds the address it came from (a SIP INVITE's, an AudioSocket connection's); an address in
/// none takes the fallback (sip.tenant / audiosocket.tenant, possibly none). As a hosted
/// contact center tells its customers' PBXs and SBCs apart: their calls then count, list and
/// post-process (hotwords, redaction) as that tenant's.
class tenant_sources {
 public:
  /// Errors name the part that is not "tenant: addresses", a tenant name that is not 1..64 of
  /// [A-Za-z0-9._-], a tenant named twice, or an entry that is not an address or network.
  static result<tenant_sources> parse(std::string_view text);
  bool empty() const { return tenants_.empty(); }
  /// The tenant of a call from `a`; `fallback` when no list holds it.
  const std::string& tenant_of(const boost::asio::ip::address& a, const std::string& fallback) const;

 private:
  std::vector<std::pair<std::string, source_filter>> tenants_;
};

/// The admission settings of a listener with no credentials of its own ([sip], [audiosocket]):
/// `allowed_sources`, `tenant_sources` and the fallback `tenant`, parsed and checked together.
/// Errors name the key under `section` ("sip.allowed_sources: ...", "audiosocket.tenant = ...").
struct source_admission {
  source_filter allowed;
  tenant_sources tenants;

  static result<source_admission> parse(std::string_view section, std::string_view allowed_sources,
                                        std::string_view tenant_sources_text, const std::string& tenant);
};

}  // namespace sluice::net
