// PUT /v1/tenants/{id}/hotwords as a function (who may call it, what it accepts), and the
// result JSON's two forms. The server route only forwards to put_tenant_hotwords.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "net/result_json.hpp"
#include "net/tenant_api.hpp"

using namespace sluice;
using namespace sluice::net;

namespace {

auth::principal key_of(const std::string& tenant, const char* scopes) {
  auto s = auth::scope_set::parse(scopes);
  REQUIRE(s.has_value());
  return auth::principal{tenant, "k_" + tenant, *s};
}

const std::string body = R"({"hotwords": ["acme premium", "sluice pro 4"]})";

}  // namespace

TEST_CASE("tenant API: admin may replace any tenant's hotwords, a tenant only its own") {
  moe::postproc::tenant_store store;
  auto r = put_tenant_hotwords("/v1/tenants/billing/hotwords", body, key_of("ops", "admin"), store);
  CHECK(r.status == 200);
  REQUIRE(store.get("billing"));
  CHECK(store.get("billing")->hotwords == std::vector<std::string>{"acme premium", "sluice pro 4"});
  const auto j = nlohmann::json::parse(r.body);
  CHECK(j["tenant"] == "billing");
  CHECK(j["hotwords"] == 2);
  CHECK(j["version"].get<uint64_t>() == store.get("billing")->version);

  r = put_tenant_hotwords("/v1/tenants/billing/hotwords", R"({"hotwords": ["mine"]})", key_of("billing", "stream"), store);
  CHECK(r.status == 200);
  CHECK(store.get("billing")->hotwords == std::vector<std::string>{"mine"});

  // Another tenant's key, or the own tenant's key without the stream scope: refused, unchanged.
  r = put_tenant_hotwords("/v1/tenants/billing/hotwords", body, key_of("support", "stream,read"), store);
  CHECK(r.status == 403);
  r = put_tenant_hotwords("/v1/tenants/billing/hotwords", body, key_of("billing", "read"), store);
  CHECK(r.status == 403);
  CHECK(store.get("billing")->hotwords == std::vector<std::string>{"mine"});
  // The anonymous principal of a server without keys holds admin.
  CHECK(put_tenant_hotwords("/v1/tenants/x/hotwords", body, auth::principal::anonymous(), store).status == 200);
}

TEST_CASE("tenant API: bad paths, ids, bodies and hotwords get 404/400 with the reason") {
  moe::postproc::tenant_store store;
  const auto admin = key_of("ops", "admin");
  CHECK(put_tenant_hotwords("/v1/tenants/billing", body, admin, store).status == 404);
  CHECK(put_tenant_hotwords("/v1/tenants/billing/lexicon", body, admin, store).status == 404);
  auto r = put_tenant_hotwords("/v1/tenants/bad id/hotwords", body, admin, store);
  CHECK(r.status == 400);
  CHECK(r.body.find("tenant id") != std::string::npos);
  r = put_tenant_hotwords("/v1/tenants/b/hotwords", "not json", admin, store);
  CHECK(r.status == 400);
  r = put_tenant_hotwords("/v1/tenants/b/hotwords", R"({"words": []})", admin, store);
  CHECK(r.status == 400);
  CHECK(r.body.find("hotwords") != std::string::npos);
  r = put_tenant_hotwords("/v1/tenants/b/hotwords", R"({"hotwords": [4]})", admin, store);
  CHECK(r.status == 400);
  r = put_tenant_hotwords("/v1/tenants/b/hotwords", R"({"hotwords": ["acme 500"]})", admin, store);
  CHECK(r.status == 400);
  CHECK(r.body.find("weight") != std::string::npos);
  CHECK(store.get("b") == nullptr);
}

TEST_CASE("result JSON: lexical and display forms and the redacted spans") {
  actors::transcript_event ev;
  ev.utterance = 3;
  ev.is_final = true;
  ev.text = "it costs [card]";
  ev.words = {{"it", 0, 100, 0.9f}, {"costs", 100, 200, 0.9f}, {"[card]", 200, 900, 0.8f}};
  ev.display_text = "It costs [card].";
  ev.display_words = {{"It", 0, 100, 0.9f}, {"costs", 100, 200, 0.9f}, {"[card].", 200, 900, 0.8f}};
  ev.redactions = {{200, 900, "card"}};
  const auto j = result_json(ev);
  CHECK(j["type"] == "final");
  CHECK(j["text"] == "it costs [card]");
  CHECK(j["display_text"] == "It costs [card].");
  REQUIRE(j["display_words"].size() == 3);
  CHECK(j["display_words"][2]["word"] == "[card].");
  REQUIRE(j["redactions"].size() == 1);
  CHECK(j["redactions"][0]["start_ms"] == 200);
  CHECK(j["redactions"][0]["end_ms"] == 900);
  CHECK(j["redactions"][0]["kind"] == "card");
}
