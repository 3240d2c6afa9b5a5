#include "net/auth/tenant_view.hpp"

#include <nlohmann/json.hpp>

namespace sluice::net::auth {

std::string snapshot_for(const std::string& snapshot_json, const principal& who) {
  if (who.sees_every_tenant()) return snapshot_json;
  auto j = nlohmann::json::parse(snapshot_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "{}";
  auto& actors = j["actors"];
  if (!actors.is_array()) return j.dump();
  nlohmann::json kept = nlohmann::json::array();
  for (auto& a : actors) {
    if (!a.is_object()) continue;
    // Any entry with a tenant or a text is a stream's: only its own tenant sees it. A channel
    // opened without a tenant (in-process, uploads) is for admins only.
    const bool streamish = a.value("kind", "") == "channel" || a.contains("tenant") || a.contains("text");
    const auto tenant = a.contains("tenant") && a["tenant"].is_string() ? a["tenant"].get<std::string>() : std::string();
    if (streamish && (tenant.empty() || tenant != who.tenant)) {
      if (a.value("kind", "") != "channel") {
        // Not a stream: keep its figures, drop whatever text it carries.
        a.erase("text");
        a.erase("tenant");
        kept.push_back(std::move(a));
      }
      continue;
    }
    kept.push_back(std::move(a));
  }
  actors = std::move(kept);
  return j.dump();
}

}  // namespace sluice::net::auth
