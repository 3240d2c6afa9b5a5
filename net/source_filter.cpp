#include "net/source_filter.hpp"

#include "net/auth/principal.hpp"

namespace sluice::net {

namespace asio = boost::asio;

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The next `sep`-separated entry of `text`, trimmed (possibly empty); `text` moves past it.
std::string_view next_entry(std::string_view& text, char sep) {
  const auto at = text.find(sep);
  const auto entry = trim(text.substr(0, at));
  text = at == std::string_view::npos ? std::string_view{} : text.substr(at + 1);
  return entry;
}
}  // namespace

result<source_filter> source_filter::parse(std::string_view list) {
  source_filter f;
  while (!list.empty()) {
    const auto entry = next_entry(list, ',');
    if (entry.empty()) continue;
    const std::string e(entry);
    boost::system::error_code ec;
    if (e.find('/') == std::string::npos) {
      const auto a = asio::ip::make_address(e, ec);
      if (!ec && a.is_v4()) f.v4_.emplace_back(a.to_v4(), 32);
      else if (!ec) f.v6_.emplace_back(a.to_v6(), 128);
    } else if (e.find(':') == std::string::npos) {
      // A host address with a prefix (10.1.2.3/8) names its network, as routers read it.
      const auto n = asio::ip::make_network_v4(e, ec);
      if (!ec) f.v4_.push_back(n.canonical());
    } else {
      const auto n = asio::ip::make_network_v6(e, ec);
      if (!ec) f.v6_.push_back(n.canonical());
    }
    if (ec) return fail(errc::invalid_config, "\"" + e + "\" is not an IP address or a network (a.b.c.d/n, x::/n)");
  }
  return f;
}

bool source_filter::allows(const asio::ip::address& a) const {
  if (empty()) return true;
  auto in_v4 = [&](const asio::ip::address_v4& x) {
    for (const auto& n : v4_)
      if (asio::ip::network_v4(x, 32).is_subnet_of(n) || asio::ip::network_v4(x, 32) == n) return true;
    return false;
  };
  if (a.is_v4()) return in_v4(a.to_v4());
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) return in_v4(asio::ip::make_address_v4(asio::ip::v4_mapped, v6));
  for (const auto& n : v6_)
    if (asio::ip::network_v6(v6, 128).is_subnet_of(n) || asio::ip::network_v6(v6, 128) == n) return true;
  return false;
}

result<tenant_sources> tenant_sources::parse(std::string_view text) {
  tenant_sources t;
  while (!text.empty()) {
    const auto part = next_entry(text, ';');
    if (part.empty()) continue;
    const auto colon = part.find(':');
    // An IPv6 address alone ("fd00::/8") has colons too: a tenant name has none, and the colon
    // after it is followed by an address, not by another colon.
    const bool separated = colon != std::string_view::npos && part.substr(colon + 1, 1) != ":";
    const auto name = separated ? trim(part.substr(0, colon)) : std::string_view{};
    if (name.empty() || !auth::valid_tenant(name))
      return fail(errc::invalid_config, "\"" + std::string(part) +
                                            "\" is not \"tenant: addresses\" with a tenant of 1 to 64 of A-Z a-z 0-9 . _ -");
    for (const auto& [known, filter] : t.tenants_)
      if (known == name) return fail(errc::invalid_config, "tenant \"" + known + "\" is named twice");
    auto filter = source_filter::parse(part.substr(colon + 1));
    if (!filter) return fail(errc::invalid_config, "tenant \"" + std::string(name) + "\": " + filter.error().message);
    if (filter->empty()) return fail(errc::invalid_config, "tenant \"" + std::string(name) + "\" has no addresses");
    t.tenants_.emplace_back(std::string(name), std::move(*filter));
  }
  return t;
}

const std::string& tenant_sources::tenant_of(const asio::ip::address& a, const std::string& fallback) const {
  for (const auto& [tenant, filter] : tenants_)
    if (filter.allows(a)) return tenant;
  return fallback;
}

result<source_admission> source_admission::parse(std::string_view section, std::string_view allowed_sources,
                                                  std::string_view tenant_sources_text, const std::string& tenant) {
  const std::string key(section);
  auto allowed = source_filter::parse(allowed_sources);
  if (!allowed) return fail(errc::invalid_config, key + ".allowed_sources: " + allowed.error().message);
  auto tenants = tenant_sources::parse(tenant_sources_text);
  if (!tenants) return fail(errc::invalid_config, key + ".tenant_sources: " + tenants.error().message);
  if (!tenant.empty() && !auth::valid_tenant(tenant))
    return fail(errc::invalid_config, key + ".tenant = \"" + tenant + "\": " + std::string(auth::tenant_rule));
  return source_admission{std::move(*allowed), std::move(*tenants)};
}

}  // namespace sluice::net
