#pragma once
/// Which peers may place SIP calls: a list of IP addresses and networks in CIDR form
/// ("10.0.0.0/8, 192.0.2.7, fd00::/8"), as a contact center names its PBXs and SBCs (the way
/// trunks to a recording server are usually secured, rather than Digest passwords). An empty
/// list allows everyone. Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include "config/error.hpp"

namespace sluice::net::sip {

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

}  // namespace sluice::net::sip
