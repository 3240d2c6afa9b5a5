#include "net/request_policy.hpp"

#include <algorithm>
#include <cctype>

#include <boost/asio/ip/address.hpp>

#include "net/json_fields.hpp"

namespace sluice::net {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= list.size()) {
    auto comma = list.find(',', i);
    if (comma == std::string::npos) comma = list.size();
    auto name = list.substr(i, comma - i);
    const auto a = name.find_first_not_of(' ');
    if (a != std::string::npos) out.push_back(lower(name.substr(a, name.find_last_not_of(' ') + 1 - a)));
    i = comma + 1;
  }
  return out;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto a = boost::asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

bool is_ip(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

std::string host_of(std::string_view authority) {
  std::string a = lower(authority);
  if (!a.empty() && a.front() == '[') {
    const auto close = a.find(']');
    return close == std::string::npos ? a : a.substr(1, close - 1);
  }
  // One colon: host:port. More: an unbracketed IPv6 literal (not valid in a Host header, but
  // then it names no other host either).
  if (std::count(a.begin(), a.end(), ':') == 1) a.resize(a.find(':'));
  return a;
}

request_policy::request_policy(const config::server_config& cfg)
    : bound_(lower(cfg.host)), hosts_(split_names(cfg.allowed_hosts)), origins_(split_names(cfg.allowed_origins)) {
  boost::system::error_code ec;
  const auto a = boost::asio::ip::make_address(cfg.host, ec);
  bound_any_ = !ec && a.is_unspecified();
  any_host_ = contains(hosts_, "*");
  any_origin_ = contains(origins_, "*");
}

bool request_policy::host_allowed(const std::string& host) const {
  return any_host_ || is_loopback(host) || host == bound_ || (bound_any_ && is_ip(host)) || contains(hosts_, host);
}

std::string request_policy::refusal(std::string_view host_header, std::string_view origin_header) const {
  const std::string host = host_of(host_header);
  if (!host_header.empty() && !host_allowed(host))
    return "Host \"" + valid_utf8(host_header) + "\" is not served here (add it to server.allowed_hosts)";
  if (origin_header.empty() || any_origin_) return {};
  const std::string origin = lower(origin_header);
  if (contains(origins_, origin)) return {};
  // scheme://authority; "null" (sandboxed frames, file: pages) has no host and is refused.
  const auto sep = origin.find("://");
  if (sep != std::string::npos && (origin.compare(0, sep, "http") == 0 || origin.compare(0, sep, "https") == 0)) {
    const std::string origin_host = host_of(origin.substr(sep + 3));
    if (!host_header.empty() && origin_host == host) return {};                // the page came from this host
    if (is_loopback(origin_host) && is_loopback(host)) return {};  // localhost vs 127.0.0.1
  }
  return "Origin \"" + valid_utf8(origin_header) + "\" is not allowed (add it to server.allowed_origins)";
}

}  // namespace sluice::net
