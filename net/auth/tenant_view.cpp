#include "net/auth/tenant_view.hpp"

#include <nlohmann/json.hpp>

namespace sluice::net::auth {

namespace {

using nlohmann::json;

// A latency histogram with the bounds of `like` and nothing observed.
json empty_histogram(const json& like) {
  json h = like;
  h["count"] = 0;
  h["sum_ms"] = 0.0;
  for (const char* q : {"p50_ms", "p90_ms", "p99_ms"}) h[q] = 0.0;
  if (h.contains("counts") && h["counts"].is_array())
    for (auto& c : h["counts"]) c = 0;
  return h;
}

// The tenant's totals as the metrics actor keeps them; zeros (with the engine's stream latency
// histograms, empty) for a tenant that has not streamed since the engine started.
json tenant_totals(const json& snapshot, const std::string& tenant) {
  if (const auto t = snapshot.find("tenants"); t != snapshot.end() && t->is_object())
    if (const auto own = t->find(tenant); own != t->end() && own->is_object()) return *own;
  json latency = json::object();
  if (const auto k = snapshot.find("kinds"); k != snapshot.end() && k->is_object())
    if (const auto c = k->find("channel"); c != k->end() && c->is_object() && c->contains("latency") &&
                                          (*c)["latency"].is_object())
      for (auto& [key, h] : (*c)["latency"].items()) latency[key] = empty_histogram(h);
  return {{"live", 0}, {"counters", json::object()}, {"latency", latency}};
}

double counter(const json& totals, const char* key) {
  const auto c = totals.find("counters");
  if (c == totals.end() || !c->is_object()) return 0.0;
  const auto v = c->find(key);
  return v != c->end() && v->is_number() ? v->get<double>() : 0.0;
}

}  // namespace

std::string snapshot_for(const std::string& snapshot_json, const principal& who) {
  if (who.sees_every_tenant()) return snapshot_json;
  auto j = json::parse(snapshot_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "{}";
  const bool engine_view = who.allows(scope::metrics);
  auto& actors = j["actors"];
  if (actors.is_array()) {
    json kept = json::array();
    for (auto& a : actors) {
      if (!a.is_object()) continue;
      // A channel is a stream's, and so is any entry that names a tenant: only its own tenant
      // sees it. A channel opened without a tenant (in-process, uploads) is for admins only.
      const auto tenant = a.contains("tenant") && a["tenant"].is_string() ? a["tenant"].get<std::string>() : std::string();
      if (!tenant.empty() && tenant == who.tenant) {
        kept.push_back(std::move(a));
        continue;
      }
      if (a.value("kind", "") == "channel" || !tenant.empty()) continue;
      // A shared actor: its figures in the engine view (without whatever text it carries); for a
      // tenant only its health, not the volume it handles.
      a.erase("text");
      a.erase("tenant");
      if (!engine_view) {
        json health;
        for (const char* key : {"name", "kind", "mailbox", "busy"})
          if (a.contains(key)) health[key] = a[key];
        kept.push_back(std::move(health));
        continue;
      }
      kept.push_back(std::move(a));
    }
    actors = std::move(kept);
  }
  j["view"] = engine_view ? "engine" : "tenant";
  j["tenant"] = who.tenant;
  if (engine_view) return j.dump();
  const json own = tenant_totals(j, who.tenant);
  j["kinds"] = json{{"channel", own}};
  j["summary"] = {{"channels_live", own.value("live", 0)},
                  {"audio_s", counter(own, "audio_ms") / 1000.0},
                  {"finals", counter(own, "finals")},
                  {"partials", counter(own, "partials")}};
  j["tenants"] = json{{who.tenant, own}};
  j.erase("reports");
  return j.dump();
}

}  // namespace sluice::net::auth
