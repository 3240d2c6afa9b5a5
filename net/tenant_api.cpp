#include "net/tenant_api.hpp"

#include <spdlog/spdlog.h>

#include "actors/channel_pipeline.hpp"
#include "net/json_fields.hpp"
#include "net/ws_messages.hpp"

namespace sluice::net {

namespace {

constexpr std::string_view k_prefix = "/v1/tenants/";
constexpr std::string_view k_suffix = "/hotwords";
constexpr int k_ok = 200, k_bad_request = 400, k_forbidden = 403, k_not_found = 404;
// Any weight the context graph accepts; only the syntax is checked here.
constexpr float k_check_weight = 1.0f;

tenant_api_reply error_reply(int status, const std::string& why) { return {status, to_wire(json{{"error", why}})}; }

}  // namespace

tenant_api_reply put_tenant_hotwords(std::string_view path, std::string_view body, const auth::principal& who,
                                     moe::postproc::tenant_store& store) {
  if (path.substr(0, k_prefix.size()) != k_prefix || path.size() <= k_prefix.size() + k_suffix.size() ||
      path.substr(path.size() - k_suffix.size()) != k_suffix)
    return error_reply(k_not_found, "not found: the tenant API is PUT /v1/tenants/{id}/hotwords");
  const std::string id(path.substr(k_prefix.size(), path.size() - k_prefix.size() - k_suffix.size()));
  if (!moe::postproc::valid_tenant_id(id))
    return error_reply(k_bad_request, "tenant id must be 1..64 of letters, digits, '-', '_', '.'");
  const bool own = !who.tenant.empty() && who.tenant == id && who.allows(auth::scope::stream);
  if (!who.allows(auth::scope::admin) && !own)
    return error_reply(k_forbidden, "only an admin key or the tenant's own stream key may change its hotwords");
  auto j = parse_object(body);
  if (!j) return error_reply(k_bad_request, "body: " + j.error().message);
  const auto it = j->find("hotwords");
  if (it == j->end() || !it->is_array()) return error_reply(k_bad_request, "body must be {\"hotwords\": [\"phrase\", ...]}");
  if (it->size() > max_hotwords)
    return error_reply(k_bad_request, "at most " + std::to_string(max_hotwords) + " hotwords");
  std::vector<std::string> lines;
  for (const auto& h : *it) {
    if (!h.is_string()) return error_reply(k_bad_request, "every hotword must be a string (\"phrase\" or \"phrase weight\")");
    auto s = h.get<std::string>();
    if (s.size() > max_hotword_bytes)
      return error_reply(k_bad_request, "a hotword is longer than " + std::to_string(max_hotword_bytes) + " bytes");
    lines.push_back(std::move(s));
  }
  if (auto ok = actors::parse_hotwords(lines, k_check_weight); !ok) return error_reply(k_bad_request, ok.error().message);
  const auto n = lines.size();
  auto v = store.set_hotwords(id, std::move(lines));
  if (!v) return error_reply(k_bad_request, v.error().message);
  spdlog::info("tenants: {} hotwords replaced through the API by key {} ({} phrases, version {})", id,
               who.key_id.empty() ? "anonymous" : who.key_id, n, *v);
  return {k_ok, to_wire(json{{"tenant", id}, {"version", *v}, {"hotwords", n}})};
}

}  // namespace sluice::net
