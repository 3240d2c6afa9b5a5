// net/auth without a server: scopes, the key store (format, salted SHA-256 against Python's
// hashlib, no plaintext at rest, strict parsing), the tenant view of a metrics snapshot, and the
// gate's startup policy and per-request decisions.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>

#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <nlohmann/json.hpp>

#include "net/auth/gate.hpp"
#include "net/auth/key_store.hpp"
#include "net/auth/tenant_view.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::net::auth;
namespace http = boost::beast::http;
using json = nlohmann::json;

namespace {

scope_set scopes_of(const char* text) {
  auto s = scope_set::parse(text);
  REQUIRE_MESSAGE(s.has_value(), text);
  return *s;
}

key_store store_of(const std::vector<key_record>& records) {
  std::string text = "# test keys\n";
  for (const auto& r : records) text += format_record(r) + "\n";
  auto s = key_store::parse(text, "test");
  REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  return std::move(*s);
}

http_request get(const std::string& target) {
  http_request req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  return req;
}

http_request upgrade(const std::string& target) {
  auto req = get(target);
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, "websocket");
  req.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  req.set(http::field::sec_websocket_version, "13");
  return req;
}

}  // namespace

TEST_SUITE("auth") {
  TEST_CASE("scopes: parsed and printed back - admin implies every scope - typos are errors") {
    auto s = scopes_of("stream,read");
    CHECK(s.allows(scope::stream));
    CHECK(s.allows(scope::read));
    CHECK_FALSE(s.allows(scope::metrics));
    CHECK_FALSE(s.allows(scope::admin));
    CHECK(s.to_string() == "stream,read");
    CHECK(scopes_of("read,stream") == s);
    auto admin = scopes_of("admin");
    for (auto x : {scope::stream, scope::read, scope::metrics, scope::admin}) CHECK(admin.allows(x));
    for (const char* bad : {"", "stream,", "Stream", "write", "read,read", "stream read"}) {
      auto r = scope_set::parse(bad);
      CHECK_MESSAGE(!r.has_value(), bad);
    }
    CHECK(scope_set::parse("write").error().message.find("write") != std::string::npos);
  }

  TEST_CASE("tenant names: 1..64 of A-Z a-z 0-9 . _ -") {
    CHECK(valid_tenant("acme"));
    CHECK(valid_tenant("Acme-2.eu_west"));
    CHECK(valid_tenant(std::string(64, 'a')));
    for (std::string bad : {std::string(), std::string(65, 'a'), std::string("a b"), std::string("a\nb"),
                            std::string("a#b"), std::string("t\xc3\xa9")})
      CHECK_FALSE(valid_tenant(bad));
  }

  TEST_CASE("a made key authenticates as its tenant and scopes - near misses and other shapes do not") {
    auto k = make_key("acme", scopes_of("stream,read"));
    REQUIRE(k.has_value());
    // sk_<16 hex id>_<64 hex secret>
    REQUIRE(k->key.size() == 3 + 16 + 1 + 64);
    CHECK(k->key.rfind("sk_" + k->record.id + "_", 0) == 0);
    auto other = make_key("globex", scopes_of("admin"));
    REQUIRE(other.has_value());
    CHECK(other->key != k->key);
    CHECK(other->record.id != k->record.id);
    auto store = store_of({k->record, other->record});
    CHECK(store.size() == 2);

    auto who = store.authenticate(k->key);
    REQUIRE(who.has_value());
    CHECK(who->tenant == "acme");
    CHECK(who->key_id == k->record.id);
    CHECK(who->scopes == scopes_of("stream,read"));
    CHECK_FALSE(who->sees_every_tenant());
    auto boss = store.authenticate(other->key);
    REQUIRE(boss.has_value());
    CHECK(boss->tenant == "globex");
    CHECK(boss->sees_every_tenant());

    // One secret digit changed, at the start and at the end.
    for (std::size_t pos : {k->key.size() - 1, std::size_t{3 + 16 + 1}}) {
      std::string near = k->key;
      near[pos] = near[pos] == '0' ? '1' : '0';
      CHECK_FALSE(store.authenticate(near).has_value());
    }
    // acme's id with globex's secret.
    CHECK_FALSE(store.authenticate("sk_" + k->record.id + other->key.substr(3 + 16)).has_value());
    for (std::string bad : {std::string(), std::string("sk_"), k->key + "0", k->key.substr(0, k->key.size() - 1),
                            "SK" + k->key.substr(2), "Bearer " + k->key, k->record.id, format_record(k->record)})
      CHECK_MESSAGE(!store.authenticate(bad).has_value(), bad);
  }

  TEST_CASE("the stored hash is SHA-256(salt || key) as Python's hashlib computes it") {
    key_record r;
    r.id = "0123456789abcdef";
    r.tenant = "acme";
    r.scopes = scopes_of("read");
    for (std::size_t i = 0; i < r.salt.size(); ++i) r.salt[i] = static_cast<uint8_t>(i);
    // python3 -c "import hashlib; key='sk_0123456789abcdef_'+'ab'*32;
    //   print(hashlib.sha256(bytes(range(16))+key.encode()).hexdigest())"
    const std::string line = format_record(r);
    const std::string from_python = "dc3299664912596fc631ab83adb0dce41c5ae265fad718543f4b7879d113b777";
    std::string text = r.id + " acme read 000102030405060708090a0b0c0d0e0f " + from_python + "\n";
    auto store = key_store::parse(text, "known-answer");
    REQUIRE(store.has_value());
    std::string key = "sk_0123456789abcdef_";
    for (int i = 0; i < 32; ++i) key += "ab";
    auto who = store->authenticate(key);
    REQUIRE(who.has_value());
    CHECK(who->tenant == "acme");
    key[key.size() - 1] = 'c';
    CHECK_FALSE(store->authenticate(key).has_value());
    CHECK(line.rfind("0123456789abcdef acme read 000102030405060708090a0b0c0d0e0f ", 0) == 0);
  }

  TEST_CASE("the keys file holds no key bytes and is owner-only and loads back") {
    test::temp_dir tmp;
    const std::string path = tmp.file("keys");
    auto a = make_key("acme", scopes_of("stream"));
    auto b = make_key("globex", scopes_of("read,metrics"));
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    REQUIRE(append_record(path, a->record).has_value());
    REQUIRE(append_record(path, b->record).has_value());
    const auto bytes = test::read_bytes(path);
    const std::string file(bytes.begin(), bytes.end());
    for (const auto* k : {&a->key, &b->key}) {
      const std::string secret = k->substr(3 + 16 + 1);
      CHECK(file.find(*k) == std::string::npos);
      CHECK(file.find(secret) == std::string::npos);
      // Nor any 16-digit run of the secret (a partial leak).
      for (std::size_t i = 0; i + 16 <= secret.size(); i += 8)
        CHECK(file.find(secret.substr(i, 16)) == std::string::npos);
    }
    struct stat sb{};
    REQUIRE(::stat(path.c_str(), &sb) == 0);
    CHECK((sb.st_mode & 0777) == 0600);
    auto store = key_store::load(path);
    REQUIRE(store.has_value());
    CHECK(store->size() == 2);
    CHECK(store->authenticate(a->key)->tenant == "acme");
    CHECK(store->authenticate(b->key)->tenant == "globex");
  }

  TEST_CASE("malformed keys files are errors naming the line and the problem") {
    auto k = make_key("acme", scopes_of("stream"));
    REQUIRE(k.has_value());
    const std::string good = format_record(k->record);
    struct bad_case {
      std::string text, expect;
    };
    const std::string salt(32, '0'), hash(64, '0');
    for (const auto& c : std::vector<bad_case>{
             {"\n" + good + " extra\n", "test:2: expected 5 fields"},
             {"0123 acme stream " + salt + " " + hash, "test:1: the id"},
             {"0123456789abcdef a/b stream " + salt + " " + hash, "tenant \"a/b\""},
             {"0123456789abcdef acme write " + salt + " " + hash, "unknown scope \"write\""},
             {"0123456789abcdef acme stream " + salt.substr(2) + " " + hash, "the salt"},
             {"0123456789abcdef acme stream " + salt + " " + std::string(64, 'G'), "the hash"},
             {"0123456789abcdef acme stream " + salt + " " + std::string(64, 'A'), "the hash"},
             {good + "\n# comment\n" + good, "test:3: key id " + k->record.id + " appears twice"},
         }) {
      auto r = key_store::parse(c.text, "test");
      REQUIRE_MESSAGE(!r.has_value(), c.text);
      CHECK(r.error().code == errc::corrupt);
      CHECK_MESSAGE(r.error().message.find(c.expect) != std::string::npos, r.error().message, " / ", c.expect);
    }
    CHECK(key_store::load("/nonexistent/keys").error().code == errc::io);
    CHECK(key_store::parse("# only comments\n\n   \n", "t")->size() == 0);
  }

  TEST_CASE("tenant view: a tenant sees its own channels and totals and the shared actors' health only - metrics adds the engine's figures - admin and anonymous see all") {
    const json hist = {{"count", 4}, {"sum_ms", 900.0}, {"p50_ms", 200.0}, {"p90_ms", 300.0}, {"p99_ms", 300.0},
                       {"buckets_ms", {100, 200, 300}}, {"counts", {0, 2, 2, 0}}};
    const json snap = {
        {"engine", "e"},
        {"reports", 812},
        {"summary", {{"channels_live", 3}, {"audio_s", 42.0}, {"finals", 9}, {"batches", 77}}},
        {"kinds",
         {{"channel", {{"live", 3}, {"counters", {{"audio_ms", 42000.0}, {"finals", 9.0}}}, {"latency", {{"final_latency_ms", hist}}}}},
          {"batcher", {{"live", 1}, {"counters", {{"batches", 77.0}}}, {"latency", json::object()}}}}},
        {"tenants",
         {{"acme", {{"live", 1}, {"counters", {{"audio_ms", 5000.0}, {"finals", 2.0}, {"partials", 7.0}}},
                    {"latency", {{"final_latency_ms", hist}}}}},
          {"globex", {{"live", 1}, {"counters", {{"audio_ms", 30000.0}, {"finals", 6.0}}}, {"latency", json::object()}}}}},
        {"actors",
         json::array({{{"name", "batcher"}, {"kind", "batcher"}, {"mailbox", 2}, {"busy", 0.25}, {"messages_per_s", 310.0},
                       {"counters", {{"batches", 77.0}}}, {"gauges", {{"streams", 3.0}}}, {"text", ""}, {"tenant", ""}},
                      {{"name", "channel/1"}, {"kind", "channel"}, {"text", "hello from acme"}, {"tenant", "acme"},
                       {"counters", {{"audio_ms", 5000.0}}}},
                      {{"name", "channel/2"}, {"kind", "channel"}, {"text", "globex secret"}, {"tenant", "globex"}},
                      {{"name", "channel/3"}, {"kind", "channel"}, {"text", "in-process call"}, {"tenant", ""}}})}};
    const std::string text = snap.dump();
    auto names = [](const json& doc) {
      std::vector<std::string> out;
      for (const auto& a : doc["actors"]) out.push_back(a["name"]);
      return out;
    };

    const principal acme{"acme", "0000000000000001", scopes_of("stream,read")};
    const auto seen_text = snapshot_for(text, acme);
    const auto seen = json::parse(seen_text);
    CHECK(seen["view"] == "tenant");
    CHECK(seen["tenant"] == "acme");
    CHECK(names(seen) == std::vector<std::string>{"batcher", "channel/1"});
    CHECK(seen_text.find("globex") == std::string::npos);  // not its stream, not its totals, not its name
    CHECK(seen_text.find("in-process call") == std::string::npos);
    // Its own channel whole; the shared batcher's health only.
    CHECK(seen["actors"][1]["text"] == "hello from acme");
    CHECK(seen["actors"][0] == json{{"name", "batcher"}, {"kind", "batcher"}, {"mailbox", 2}, {"busy", 0.25}});
    // Its own totals where the engine's were.
    CHECK(seen["summary"] == json{{"channels_live", 1}, {"audio_s", 5.0}, {"finals", 2.0}, {"partials", 7.0}});
    CHECK(seen["kinds"].size() == 1);
    CHECK(seen["kinds"]["channel"] == snap["tenants"]["acme"]);
    CHECK(seen["tenants"] == json{{"acme", snap["tenants"]["acme"]}});
    CHECK_FALSE(seen.contains("reports"));

    // A tenant that has not streamed yet: zeros, the engine's latency buckets empty.
    const principal initech{"initech", "0000000000000003", scopes_of("read")};
    const auto fresh = json::parse(snapshot_for(text, initech));
    CHECK(names(fresh) == std::vector<std::string>{"batcher"});
    CHECK(fresh["summary"]["channels_live"] == 0);
    CHECK(fresh["summary"]["audio_s"] == 0.0);
    const auto& empty = fresh["kinds"]["channel"]["latency"]["final_latency_ms"];
    CHECK(empty["count"] == 0);
    CHECK(empty["buckets_ms"] == hist["buckets_ms"]);
    CHECK(empty["counts"] == json{0, 0, 0, 0});
    CHECK(fresh.dump().find("42") == std::string::npos);

    // The metrics scope: the engine's figures and every tenant's totals, still no other tenant's stream.
    const principal monitor{"acme", "0000000000000004", scopes_of("read,metrics")};
    const auto engine = json::parse(snapshot_for(text, monitor));
    CHECK(engine["view"] == "engine");
    CHECK(names(engine) == std::vector<std::string>{"batcher", "channel/1"});
    CHECK(engine["summary"] == snap["summary"]);
    CHECK(engine["kinds"] == snap["kinds"]);
    CHECK(engine["tenants"] == snap["tenants"]);
    CHECK(engine["actors"][0]["counters"]["batches"] == 77.0);
    CHECK_FALSE(engine["actors"][0].contains("text"));
    CHECK(engine.dump().find("globex secret") == std::string::npos);

    const principal admin{"ops", "0000000000000002", scopes_of("admin")};
    CHECK(snapshot_for(text, admin) == text);
    CHECK(snapshot_for(text, principal::anonymous()) == text);
    CHECK(snapshot_for("not json", acme) == "{}");
  }

  TEST_CASE("startup policy: loopback without keys is served - elsewhere it needs keys or the explicit flag") {
    CHECK(is_loopback_host("127.0.0.1"));
    CHECK(is_loopback_host("127.8.9.10"));
    CHECK(is_loopback_host("::1"));
    for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "localhost", ""}) CHECK_FALSE(is_loopback_host(h));

    config::server_config server;
    config::auth_config auth;
    auto g = gate::create(server, auth);
    REQUIRE(g.has_value());
    CHECK_FALSE((*g)->enabled());
    CHECK((*g)->admit(get("/v1/actors"))->sees_every_tenant());

    server.host = "0.0.0.0";
    auto refused = gate::create(server, auth);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == errc::invalid_config);
    CHECK(refused.error().message.find("auth.keys_file") != std::string::npos);
    CHECK(refused.error().message.find("allow_insecure_public") != std::string::npos);
    auth.allow_insecure_public = true;
    CHECK(gate::create(server, auth).has_value());

    test::temp_dir tmp;
    auth.allow_insecure_public = false;
    auth.keys_file = tmp.file("missing");
    CHECK(gate::create(server, auth).error().code == errc::io);
    std::ofstream(tmp.file("empty")) << "# no keys yet\n";
    auth.keys_file = tmp.file("empty");
    auto empty = gate::create(server, auth);
    REQUIRE_FALSE(empty.has_value());
    CHECK(empty.error().message.find("holds no keys") != std::string::npos);
    auto k = make_key("acme", scopes_of("stream"));
    REQUIRE(append_record(tmp.file("keys"), k->record).has_value());
    auth.keys_file = tmp.file("keys");
    auto with_keys = gate::create(server, auth);  // on 0.0.0.0: keys make it allowed
    REQUIRE(with_keys.has_value());
    CHECK((*with_keys)->enabled());
  }

  TEST_CASE("per request: where a key may be presented - 401 vs 403 - open routes") {
    test::temp_dir tmp;
    auto streamer = make_key("acme", scopes_of("stream"));
    auto reader = make_key("acme", scopes_of("read"));
    auto scraper = make_key("ops", scopes_of("metrics"));
    for (const auto* k : {&streamer, &reader, &scraper}) REQUIRE(append_record(tmp.file("keys"), (*k)->record).has_value());
    config::server_config server;
    config::auth_config auth;
    auth.keys_file = tmp.file("keys");
    auto g = gate::create(server, auth);
    REQUIRE(g.has_value());
    const gate& gt = **g;

    auto status_of = [&](const http_request& req) { return gt.admit(req) ? 200 : gt.admit(req).error().status; };
    auto with_bearer = [](http_request req, const std::string& key) {
      req.set(http::field::authorization, "Bearer " + key);
      return req;
    };
    // No key.
    for (const char* path : {"/", "/index.html", "/v1/actors", "/metrics", "/nowhere"}) CHECK_MESSAGE(status_of(get(path)) == 401, path);
    CHECK(status_of(upgrade("/v1/stream")) == 401);
    CHECK(status_of(upgrade("/")) == 401);
    const auto r401 = gt.admit(get("/v1/actors")).error();
    CHECK(r401.www_authenticate == "Bearer realm=\"sluice\"");
    // Health checks never need one.
    CHECK(status_of(get("/healthz")) == 200);
    CHECK(status_of(get("/readyz")) == 200);
    // Bearer (case-insensitive scheme), X-API-Key.
    CHECK(status_of(with_bearer(upgrade("/v1/stream"), streamer->key)) == 200);
    auto lower = upgrade("/v1/stream");
    lower.set(http::field::authorization, "bearer " + streamer->key);
    CHECK(status_of(lower) == 200);
    auto xkey = get("/v1/actors");
    xkey.set("X-API-Key", reader->key);
    CHECK(status_of(xkey) == 200);
    CHECK(gt.admit(xkey)->tenant == "acme");
    // ?token= on upgrades and the dashboard page only.
    CHECK(status_of(upgrade("/v1/stream?token=" + streamer->key)) == 200);
    CHECK(status_of(upgrade("/funasr?x=1&token=" + streamer->key)) == 200);
    CHECK(status_of(get("/?token=" + reader->key)) == 200);
    CHECK(status_of(get("/v1/actors?token=" + reader->key)) == 401);
    CHECK(status_of(get("/metrics?token=" + scraper->key)) == 401);
    // Wrong key, wrong scheme.
    const auto bad = gt.admit(with_bearer(get("/v1/actors"), "sk_0000000000000000_" + std::string(64, '0'))).error();
    CHECK(bad.status == 401);
    CHECK(bad.www_authenticate.find("error=\"invalid_token\"") != std::string::npos);
    auto basic = get("/v1/actors");
    basic.set(http::field::authorization, "Basic " + reader->key);
    CHECK(status_of(basic) == 401);
    // Valid key, wrong scope: 403 naming the scope.
    const auto lacks = gt.admit(with_bearer(upgrade("/v1/stream"), reader->key)).error();
    CHECK(lacks.status == 403);
    CHECK(lacks.www_authenticate.find("error=\"insufficient_scope\", scope=\"stream\"") != std::string::npos);
    CHECK(status_of(with_bearer(get("/v1/actors"), streamer->key)) == 403);
    // The placement plan is read like /v1/actors.
    CHECK(status_of(get("/v1/placement")) == 401);
    CHECK(status_of(with_bearer(get("/v1/placement"), reader->key)) == 200);
    CHECK(status_of(with_bearer(get("/v1/placement"), streamer->key)) == 403);
    CHECK(status_of(with_bearer(get("/metrics"), reader->key)) == 403);
    CHECK(status_of(with_bearer(get("/metrics"), scraper->key)) == 200);
    http_request upload{http::verb::post, "/v1/transcribe", 11};
    CHECK(status_of(with_bearer(upload, reader->key)) == 403);
    CHECK(status_of(with_bearer(upload, streamer->key)) == 200);
    // The response: status, challenge, JSON error, connection closed.
    const auto res = gate::response(lacks, 11);
    CHECK(res.result_int() == 403);
    CHECK(res[http::field::www_authenticate] == lacks.www_authenticate);
    CHECK(json::parse(res.body())["error"].get<std::string>().find("stream") != std::string::npos);
    CHECK_FALSE(res.keep_alive());

    // metrics_open: /metrics without a key, nothing else.
    auth.metrics_open = true;
    auto open = gate::create(server, auth);
    REQUIRE(open.has_value());
    CHECK((*open)->admit(get("/metrics")).has_value());
    CHECK_FALSE((*open)->admit(get("/v1/actors")).has_value());
  }
}
