// API keys reloaded without a restart: the live key store alone (added, removed and broken
// files; a timed check sees a change once), then a running server whose keys file is rewritten
// (its timed check, and its reload entry points as SIGHUP calls them): every port and route
// that checks keys takes the new file for new requests, a broken file keeps the old keys, and the
// connections open with a key a reload revokes end (or go on, with [auth] revoke_open_streams off).
#include "tests/net/auth_test_util.hpp"

#include <cstdio>
#include <fstream>
#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "net/auth/live_key_store.hpp"
#include "tests/common/audio_tools.hpp"
#include "tests/net/switch_test_util.hpp"

using namespace sluice;
using namespace sluice::test;
using net::auth::key_record;
using net::auth::live_key_store;

namespace {

const std::string start_8k = R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})";
const std::string end_msg = R"({"type":"end"})";
// A timed check every second, waited on for at most this long: a check that never comes fails.
constexpr int check_s = 1;
constexpr auto reload_bound = std::chrono::seconds(15);

struct made_key {
  std::string key;
  key_record record;
};

made_key make(const std::string& tenant, const char* scopes) {
  auto k = net::auth::make_key(tenant, *net::auth::scope_set::parse(scopes));
  REQUIRE(k.has_value());
  return {k->key, k->record};
}

// Writes the keys file anew, as an operator should: a new file renamed over the old.
void write_keys(const std::string& path, const std::vector<key_record>& records, const std::string& extra = {}) {
  const std::string tmp = path + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& r : records) out << net::auth::format_record(r) << "\n";
    out << extra;
    REQUIRE(out.good());
  }
  REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0);
}

// Log lines at info and above, readable while the server's threads log.
class text_sink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& m) override {
    spdlog::memory_buf_t out;
    formatter_->format(m, out);
    text_.append(out.data(), out.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

struct captured_log {
  std::shared_ptr<text_sink> sink = std::make_shared<text_sink>();
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  captured_log() {
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~captured_log() { spdlog::set_default_logger(previous); }
  bool has(const std::string& s) { return sink->text().find(s) != std::string::npos; }
};

config::sluice_config with_keys(const std::string& path, int reload_check_s) {
  config::sluice_config cfg;
  cfg.auth.keys_file = path;
  cfg.auth.keys_reload_check_s = reload_check_s;
  // The waits below present a key until the server takes it: those refusals must not lock the
  // test's address out (the back-off has its own tests in auth_server_test.cpp).
  cfg.auth.max_failures = 0;
  return cfg;
}

int get_status(uint16_t port, const std::string& target, const std::string& key) {
  return request_with(port, http::verb::get, target, bearer(key)).status;
}

int upgrade_status(uint16_t port, const std::string& target, const std::string& key) {
  stepped_stream s(port);
  return s.open(target, bearer(key));
}

// What `key` gets on every door that checks keys: the dashboard page, /v1/actors and /metrics
// over HTTP, a /v1/stream upgrade on the main port and an upgrade on the FunASR port.
std::vector<int> every_door(const served& s, const std::string& key) {
  const auto funasr = s.server->port(net::ws_listener::funasr);
  REQUIRE(funasr != 0);
  return {get_status(s.port, "/", key), get_status(s.port, "/v1/actors", key), get_status(s.port, "/metrics", key),
          upgrade_status(s.port, "/v1/stream", key), upgrade_status(funasr, "/", key)};
}

// The tenant `key` authenticates as now; empty when it is refused.
std::string tenant_of(const live_key_store& store, const std::string& key) {
  const auto who = store.current()->authenticate(key);
  return who ? who->tenant : std::string();
}

const std::vector<int> all_admitted = {200, 200, 200, 101, 101};
const std::vector<int> all_refused = {401, 401, 401, 401, 401};

}  // namespace

TEST_SUITE("auth reload") {
  TEST_CASE("live key store: a reload takes an added key and drops a removed one") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "stream"), b = make("globex", "read");
    write_keys(path, {a.record});
    auto store = live_key_store::open(path);
    REQUIRE(store.has_value());
    const auto first = (*store)->current();
    CHECK(first->authenticate(a.key).has_value());
    CHECK_FALSE(first->authenticate(b.key).has_value());

    write_keys(path, {a.record, b.record});
    auto added = (*store)->reload();
    REQUIRE_MESSAGE(added.has_value(), added.error().message);
    CHECK(added->keys == 2);
    CHECK(added->added == 1);
    CHECK(added->removed == 0);
    CHECK(tenant_of(**store, b.key) == "globex");
    CHECK(tenant_of(**store, a.key) == "acme");

    write_keys(path, {b.record});
    auto removed = (*store)->reload();
    REQUIRE(removed.has_value());
    CHECK(removed->keys == 1);
    CHECK(removed->added == 0);
    CHECK(removed->removed == 1);
    CHECK_FALSE((*store)->current()->authenticate(a.key).has_value());
    CHECK((*store)->current()->authenticate(b.key).has_value());
    // A store taken before the reloads (a request in flight) is not changed by them.
    CHECK(first->authenticate(a.key).has_value());
    CHECK_FALSE(first->authenticate(b.key).has_value());

    // A file with no keys is applied: revoking the last key takes effect.
    write_keys(path, {}, "# every key revoked\n");
    auto none = (*store)->reload();
    REQUIRE(none.has_value());
    CHECK(none->keys == 0);
    CHECK_FALSE((*store)->current()->authenticate(b.key).has_value());
  }

  TEST_CASE("live key store: a broken or missing file keeps the previous keys and says why") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "stream"), b = make("globex", "read");
    write_keys(path, {a.record});
    auto store = live_key_store::open(path);
    REQUIRE(store.has_value());
    struct broken {
      std::string extra, expect;
      errc code;
    };
    for (const auto& c : std::vector<broken>{
             {"not a key line\n", path + ":3: expected 5 fields", errc::corrupt},
             {net::auth::format_record(a.record) + "\n", "key id " + a.record.id + " appears twice", errc::corrupt},
         }) {
      // b is in the broken file too: nothing of a file that fails is taken.
      write_keys(path, {a.record, b.record}, c.extra);
      auto r = (*store)->reload();
      REQUIRE(!r.has_value());
      CHECK(r.error().code == c.code);
      CHECK_MESSAGE(r.error().message.find(c.expect) != std::string::npos, r.error().message);
      CHECK((*store)->current()->authenticate(a.key).has_value());
      CHECK_FALSE((*store)->current()->authenticate(b.key).has_value());
    }
    REQUIRE(std::remove(path.c_str()) == 0);
    auto missing = (*store)->reload();
    REQUIRE(!missing.has_value());
    CHECK(missing.error().code == errc::io);
    CHECK(missing.error().message.find(path) != std::string::npos);
    CHECK((*store)->current()->authenticate(a.key).has_value());
  }

  TEST_CASE("live key store: a timed check reloads a changed file once and leaves an unchanged one") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "stream"), b = make("globex", "read");
    write_keys(path, {a.record});
    auto store = live_key_store::open(path);
    REQUIRE(store.has_value());
    CHECK_FALSE((*store)->reload_if_changed().has_value());
    // Appended in place (as `sluice keys add` does): the size changes.
    REQUIRE(net::auth::append_record(path, b.record).has_value());
    auto changed = (*store)->reload_if_changed();
    REQUIRE(changed.has_value());
    REQUIRE(changed->has_value());
    CHECK((*changed)->added == 1);
    CHECK((*store)->current()->authenticate(b.key).has_value());
    CHECK_FALSE((*store)->reload_if_changed().has_value());
    // A broken file is reported by the check that sees it, then not again until it changes.
    write_keys(path, {a.record}, "broken\n");
    auto failed = (*store)->reload_if_changed();
    REQUIRE(failed.has_value());
    CHECK_FALSE(failed->has_value());
    CHECK_FALSE((*store)->reload_if_changed().has_value());
    CHECK((*store)->current()->authenticate(b.key).has_value());
  }

  TEST_CASE("served: a key added to the file is admitted on every port and route after the timed check and a removed one refused") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "stream,read,metrics"), b = make("globex", "stream,read,metrics");
    write_keys(path, {a.record});
    served s(with_keys(path, check_s), /*protocol_ports=*/true);
    CHECK(every_door(s, a.key) == all_admitted);
    CHECK(every_door(s, b.key) == all_refused);

    REQUIRE(net::auth::append_record(path, b.record).has_value());
    CHECK(poll_until([&] { return get_status(s.port, "/v1/actors", b.key) == 200; }, reload_bound));
    CHECK(every_door(s, b.key) == all_admitted);
    CHECK(every_door(s, a.key) == all_admitted);

    write_keys(path, {b.record});
    CHECK(poll_until([&] { return get_status(s.port, "/v1/actors", a.key) == 401; }, reload_bound));
    CHECK(every_door(s, a.key) == all_refused);
    CHECK(every_door(s, b.key) == all_admitted);
  }

  TEST_CASE("served: a broken keys file keeps the keys in force, is logged without key material, and a fixed file is taken") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "read"), b = make("globex", "read");
    write_keys(path, {a.record});
    captured_log log;
    served s(with_keys(path, check_s));
    write_keys(path, {a.record, b.record}, "garbage line\n");
    CHECK(poll_until([&] { return log.has("reloading the keys file failed"); }, reload_bound));
    CHECK(log.has(path + ":3: expected 5 fields"));
    CHECK(get_status(s.port, "/v1/actors", a.key) == 200);
    CHECK(get_status(s.port, "/v1/actors", b.key) == 401);

    write_keys(path, {b.record});
    CHECK(poll_until([&] { return get_status(s.port, "/v1/actors", b.key) == 200; }, reload_bound));
    CHECK(get_status(s.port, "/v1/actors", a.key) == 401);
    const auto text = log.sink->text();
    CHECK(text.find("key " + a.record.id + " (tenant acme) revoked") != std::string::npos);
    for (const auto* k : {&a.key, &b.key}) {
      CHECK(text.find(*k) == std::string::npos);
      CHECK(text.find(k->substr(3 + 16 + 1, 16)) == std::string::npos);  // nor a piece of the secret
    }
  }

  TEST_CASE("served: reload_keys and reload (SIGHUP) apply the file at once with the timed check off") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "read"), b = make("globex", "read");
    write_keys(path, {a.record});
    served s(with_keys(path, 0));
    REQUIRE(net::auth::append_record(path, b.record).has_value());
    CHECK(get_status(s.port, "/v1/actors", b.key) == 401);  // nothing reloads by itself
    auto r = s.server->reload_keys();
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(get_status(s.port, "/v1/actors", b.key) == 200);

    write_keys(path, {b.record});
    auto hup = s.server->reload();
    REQUIRE_MESSAGE(hup.has_value(), hup.error().message);
    CHECK(get_status(s.port, "/v1/actors", a.key) == 401);
    CHECK(get_status(s.port, "/v1/actors", b.key) == 200);

    write_keys(path, {b.record, b.record});
    auto dup = s.server->reload_keys();
    REQUIRE(!dup.has_value());
    CHECK(dup.error().message.find("appears twice") != std::string::npos);
    CHECK(s.server->reload().error().message.find("appears twice") != std::string::npos);
    CHECK(get_status(s.port, "/v1/actors", b.key) == 200);
  }

  TEST_CASE("served without keys: reload_keys and reload say there is nothing to reload") {
    served s;
    CHECK(s.server->reload_keys().error().code == errc::invalid_argument);
    CHECK(s.server->reload().error().code == errc::invalid_argument);
  }

  TEST_CASE("served: revoking a key ends its open stream with key_revoked and close 1008 - another key's stream goes on with the same finals") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "stream,read"), b = make("globex", "stream");
    write_keys(path, {a.record, b.record});
    served s(with_keys(path, 0));
    stepped_stream revoked(s.port), other(s.port);
    REQUIRE(revoked.open("/v1/stream", bearer(a.key)) == 101);
    REQUIRE(other.open("/v1/stream", bearer(b.key)) == 101);
    for (auto* st : {&revoked, &other}) {
      st->send_text(start_8k);
      auto ready = st->read_next();
      REQUIRE(ready.has_value());
      CHECK((*ready)["type"] == "ready");
    }
    revoked.send_binary(std::vector<uint8_t>(1600, 0));  // 100 ms of 8 kHz silence
    const auto frames = call_pcm16_frames();
    for (std::size_t i = 0; i < frames.size() / 2; ++i) other.send_binary(frames[i]);
    CHECK(s.server->key_streams().open(a.record.id) == 1);
    CHECK(s.server->key_streams().open(b.record.id) == 1);

    write_keys(path, {b.record});
    REQUIRE(s.server->reload_keys().has_value());
    CHECK(revoked.read_to_close() == 1008);
    REQUIRE_FALSE(revoked.messages().empty());
    CHECK(revoked.messages().back()["type"] == "error");
    CHECK(revoked.messages().back()["code"] == "key_revoked");
    CHECK(upgrade_status(s.port, "/v1/stream", a.key) == 401);
    CHECK(poll_until([&] { return s.server->key_streams().open(a.record.id) == 0; }));

    // The other key's stream lost nothing: the rest of its call, then the same finals as the
    // whole call streamed again on its own afterwards.
    for (std::size_t i = frames.size() / 2; i < frames.size(); ++i) other.send_binary(frames[i]);
    other.send_text(end_msg);
    CHECK(other.read_to_close() == 1000);
    stepped_stream again(s.port);
    REQUIRE(again.open("/v1/stream", bearer(b.key)) == 101);
    again.send_text(start_8k);
    for (const auto& f : frames) again.send_binary(f);
    again.send_text(end_msg);
    CHECK(again.read_to_close() == 1000);
    REQUIRE_FALSE(again.finals().empty());
    CHECK(other.finals() == again.finals());
    // The revoked stream's call ended with the reason.
    bool found = false;
    for (const auto& c : s.server->calls().list())
      if (c.start.tenant == "acme") {
        found = true;
        CHECK(c.end_reason.find("key_revoked") != std::string::npos);
      }
    CHECK(found);
  }

  TEST_CASE("served: with revoke_open_streams off a stream opened with a key that is then revoked goes on to its end") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "stream,read"), b = make("globex", "read");
    write_keys(path, {a.record, b.record});
    auto cfg = with_keys(path, 0);
    cfg.auth.revoke_open_streams = false;
    served s(cfg);
    stepped_stream open(s.port);
    REQUIRE(open.open("/v1/stream", bearer(a.key)) == 101);
    open.send_text(start_8k);
    auto ready = open.read_next();
    REQUIRE(ready.has_value());
    CHECK((*ready)["type"] == "ready");

    write_keys(path, {b.record});
    REQUIRE(s.server->reload_keys().has_value());
    CHECK(upgrade_status(s.port, "/v1/stream", a.key) == 401);
    open.send_binary(std::vector<uint8_t>(1600, 0));  // 100 ms of 8 kHz silence
    open.send_text(end_msg);
    CHECK(open.read_to_close() == 1000);
  }

  TEST_CASE("served: a key given a scope keeps its connections, one that loses stream loses its stream but keeps /v1/events until removed") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    auto a = make("acme", "stream,read");
    write_keys(path, {a.record});
    served s(with_keys(path, 0));
    stepped_stream stream(s.port), events(s.port);
    REQUIRE(stream.open("/v1/stream", bearer(a.key)) == 101);
    stream.send_text(start_8k);
    REQUIRE(stream.read_next().has_value());  // ready
    REQUIRE(events.open("/v1/events", bearer(a.key)) == 101);
    REQUIRE(poll_until([&] { return s.server->key_streams().open(a.record.id) == 2; }));

    a.record.scopes = *net::auth::scope_set::parse("stream,read,metrics");
    write_keys(path, {a.record});
    auto more = s.server->reload_keys();
    REQUIRE(more.has_value());
    CHECK(s.server->key_streams().open(a.record.id) == 2);

    a.record.scopes = *net::auth::scope_set::parse("read");
    write_keys(path, {a.record});
    REQUIRE(s.server->reload_keys().has_value());
    CHECK(stream.read_to_close() == 1008);
    CHECK(stream.messages().back()["code"] == "key_revoked");
    CHECK(poll_until([&] { return s.server->key_streams().open(a.record.id) == 1; }));

    write_keys(path, {});
    REQUIRE(s.server->reload_keys().has_value());
    // The key removed: the subscription ends too.
    CHECK(events.read_to_close() == 1008);
    REQUIRE_FALSE(events.messages().empty());
    CHECK(events.messages().back()["type"] == "error");
    CHECK(events.messages().back()["code"] == "key_revoked");
    CHECK(poll_until([&] { return s.server->key_streams().open(a.record.id) == 0; }));
  }

  TEST_CASE("served: a switch call (jambonz STT) opened with a key that is then revoked is closed 1008 and its call ends key_revoked") {
    temp_dir tmp;
    const auto path = tmp.file("keys");
    const auto a = make("acme", "stream");
    write_keys(path, {a.record});
    served s(with_keys(path, 0));
    const auto frames = pcm16_frames(call_samples(0), 160);
    stepped_stream stt(s.port);
    REQUIRE(stt.open("/jambonz/stt", bearer(a.key)) == 101);
    stt.send_text(R"({"type":"start","language":"en-US","format":"raw","encoding":"LINEAR16","sampleRateHz":8000})");
    for (std::size_t i = 0; i < 50; ++i) stt.send_binary(frames[i]);
    REQUIRE(s.server->key_streams().open(a.record.id) == 1);
    // The call is open (its start was taken) before the key goes.
    REQUIRE(poll_until([&] {
      for (const auto& c : s.server->calls().list())
        if (c.start.source == "jambonz_stt" && c.live) return true;
      return false;
    }));
    write_keys(path, {});
    REQUIRE(s.server->reload_keys().has_value());
    CHECK(stt.read_to_close() == 1008);
    const auto c = wait_ended_call(*s.server, "jambonz_stt");
    CHECK(c.end_reason.find("key_revoked") != std::string::npos);
  }
}
