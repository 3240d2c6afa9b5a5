#include "net/auth/principal.hpp"

#include <array>

namespace sluice::net::auth {

namespace {

constexpr std::array<scope, 4> every_scope = {scope::stream, scope::read, scope::metrics, scope::admin};
constexpr std::size_t max_tenant_chars = 64;

}  // namespace

const char* to_string(scope s) {
  switch (s) {
    case scope::stream: return "stream";
    case scope::read: return "read";
    case scope::metrics: return "metrics";
    case scope::admin: return "admin";
  }
  return "?";
}

result<scope_set> scope_set::parse(std::string_view text) {
  scope_set out;
  std::size_t i = 0;
  while (i <= text.size()) {
    auto comma = text.find(',', i);
    if (comma == std::string_view::npos) comma = text.size();
    const auto name = text.substr(i, comma - i);
    bool known = false;
    for (auto s : every_scope) {
      if (name != auth::to_string(s)) continue;
      known = true;
      // The raw bit, not allows(): "admin,read" is redundant but "read,read" is a typo.
      if (out.bits_ & static_cast<uint8_t>(s)) return fail(errc::invalid_argument, "scope \"" + std::string(name) + "\" given twice");
      out.add(s);
    }
    if (!known)
      return fail(errc::invalid_argument,
                  "unknown scope \"" + std::string(name) + "\" (scopes: stream, read, metrics, admin; comma-separated)");
    i = comma + 1;
  }
  return out;
}

std::string scope_set::to_string() const {
  std::string out;
  for (auto s : every_scope)
    if (bits_ & static_cast<uint8_t>(s)) out += (out.empty() ? "" : ",") + std::string(auth::to_string(s));
  return out;
}

bool valid_tenant(std::string_view tenant) {
  if (tenant.empty() || tenant.size() > max_tenant_chars) return false;
  for (char c : tenant) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace sluice::net::auth
