#include "net/calls/calls_api.hpp"

#include "net/calls/call_json.hpp"
#include "net/http_query.hpp"

namespace sluice::net::calls {

namespace {

using json = nlohmann::json;

constexpr int status_ok = 200;
constexpr int status_bad_request = 400;
constexpr int status_forbidden = 403;
constexpr int status_not_found = 404;

api_reply error_reply(int status, const std::string& why) { return {status, dump(json{{"error", why}})}; }

// The tenant whose calls `who` asks for: its own, or for admin the one named (nullopt: all).
result<std::optional<std::string>> tenant_scope(const auth::principal& who,
                                                const std::map<std::string, std::string>& q) {
  const auto it = q.find("tenant");
  if (who.sees_every_tenant()) {
    if (it == q.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  if (it != q.end() && it->second != who.tenant)
    return fail(errc::unsupported, "this API key sees only the calls of its own tenant");
  return std::optional<std::string>(who.tenant);
}

result<bool> query_flag(const std::map<std::string, std::string>& q, const char* key) {
  const auto it = q.find(key);
  if (it == q.end()) return false;
  if (it->second == "1" || it->second == "true") return true;
  if (it->second == "0" || it->second == "false") return false;
  return fail(errc::invalid_argument, std::string(key) + " must be 1, 0, true or false");
}

int status_of(const error& e) { return e.code == errc::unsupported ? status_forbidden : status_bad_request; }

}  // namespace

bool visible_to(const call_record& c, const auth::principal& who) {
  return who.sees_every_tenant() || c.start.tenant == who.tenant;
}

api_reply list_calls(const call_registry& reg, const auth::principal& who, const std::string& target) {
  const auto q = query_params(target);
  if (!q) return error_reply(status_bad_request, q.error().message);
  call_registry::query cq;
  cq.limit = default_list_limit;
  if (const auto it = q->find("limit"); it != q->end()) {
    const auto n = query_int("limit", it->second, 1, static_cast<int64_t>(max_list_limit));
    if (!n) return error_reply(status_bad_request, n.error().message);
    cq.limit = static_cast<std::size_t>(*n);
  }
  const auto live = query_flag(*q, "live");
  if (!live) return error_reply(status_bad_request, live.error().message);
  cq.live_only = *live;
  auto tenant = tenant_scope(who, *q);
  if (!tenant) return error_reply(status_of(tenant.error()), tenant.error().message);
  cq.tenant = std::move(*tenant);
  json calls = json::array();
  for (const auto& c : reg.list(cq)) calls.push_back(call_summary_json(c));
  return {status_ok, dump(json{{"calls", std::move(calls)}})};
}

api_reply get_call(const call_registry& reg, const auth::principal& who, const std::string& id) {
  const auto c = reg.get(id);
  // Another tenant's call answers exactly as an unknown one.
  if (!c || !visible_to(*c, who)) return error_reply(status_not_found, "no such call");
  return {status_ok, dump(call_json(*c))};
}

result<subscription_filter> events_filter(const auth::principal& who, const std::string& target) {
  const auto q = query_params(target);
  if (!q) return tl::unexpected(q.error());
  subscription_filter f;
  f.kinds = live_event_kinds;
  if (const auto it = q->find("call"); it != q->end()) f.call = it->second;
  auto tenant = tenant_scope(who, *q);
  if (!tenant) return tl::unexpected(tenant.error());
  f.tenant = std::move(*tenant);
  return f;
}

}  // namespace sluice::net::calls
