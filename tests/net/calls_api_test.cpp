// Calls over HTTP on a served engine: an upload becomes a call (source "upload", a channel per
// audio channel with its label, the finals the upload's answer has); GET /v1/calls and
// /v1/calls/{id} with tenants (a tenant sees only its own calls, another tenant's call is 404,
// admin sees all, scope read); WS /v1/events delivers call_start, final and call_end of the
// calls its filter selects, and nothing of another tenant's.
#include "tests/net/auth_test_util.hpp"

#include <cctype>
#include <fstream>
#include <future>
#include <iterator>

#include "net/auth/key_store.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

json get_json(uint16_t port, const std::string& target, const headers& hs, int& status) {
  const auto r = request_with(port, http::verb::get, target, hs);
  status = r.status;
  return json::parse(r.body, nullptr, false);
}

// The non-empty texts of an upload answer's channel, in order.
std::vector<std::string> answer_texts(const json& answer, std::size_t channel) {
  std::vector<std::string> out;
  for (const auto& s : answer["channels"][channel]["segments"]) out.push_back(s["text"]);
  return out;
}

std::vector<std::string> call_texts(const json& call, std::size_t channel) {
  std::vector<std::string> out;
  for (const auto& f : call["channels"][channel]["finals"])
    if (!f["text"].get<std::string>().empty()) out.push_back(f["text"]);
  return out;
}

}  // namespace

TEST_SUITE("calls api") {
  TEST_CASE("an upload is a call: source upload, one labelled channel per audio channel, the answer's finals") {
    served s;
    const auto up = request_with(s.port, http::verb::post, "/v1/transcribe", {}, call_wav_bytes());
    REQUIRE(up.status == 200);
    const auto answer = json::parse(up.body);
    int st = 0;
    const auto list = get_json(s.port, "/v1/calls", {}, st);
    REQUIRE(st == 200);
    REQUIRE(list["calls"].size() == 1);
    const auto& summary = list["calls"][0];
    CHECK(summary["source"] == "upload");
    CHECK(summary["live"] == false);
    CHECK(summary["end_reason"] == "completed");
    REQUIRE(summary["channels"].size() == 2);
    CHECK(summary["channels"][0]["label"] == "agent");
    CHECK(summary["channels"][1]["label"] == "customer");
    const auto call = get_json(s.port, "/v1/calls/" + summary["id"].get<std::string>(), {}, st);
    REQUIRE(st == 200);
    for (std::size_t c = 0; c < 2; ++c) {
      const auto texts = answer_texts(answer, c);
      CHECK(!texts.empty());
      CHECK(call_texts(call, c) == texts);
    }
    const auto& first = call["channels"][0]["finals"][0];
    CHECK(first["end_ms"].get<int64_t>() > first["start_ms"].get<int64_t>());
    CHECK(!first["words"].empty());
    // The display form is kept beside the lexical one: a sentence (capital, final mark) with words.
    const auto display = first["display_text"].get<std::string>();
    REQUIRE(!display.empty());
    CHECK(std::isupper(static_cast<unsigned char>(display.front())));
    CHECK((display.back() == '.' || display.back() == '?'));
    CHECK(!first["display_words"].empty());
    CHECK(first["redactions"].is_array());
    CHECK(call["began_at"].get<std::string>() <= call["ended_at"].get<std::string>());
    // Unknown ids and bad queries.
    get_json(s.port, "/v1/calls/nope", {}, st);
    CHECK(st == 404);
    get_json(s.port, "/v1/calls?limit=0", {}, st);
    CHECK(st == 400);
    get_json(s.port, "/v1/calls?live=maybe", {}, st);
    CHECK(st == 400);
    const auto live = get_json(s.port, "/v1/calls?live=1", {}, st);
    CHECK(st == 200);
    CHECK(live["calls"].empty());
  }

  TEST_CASE("tenants: each sees only its own calls, another's is 404, admin sees all, read scope needed") {
    keyring ring;
    const auto acme = ring.add("acme", "stream,read");
    const auto globex = ring.add("globex", "stream,read");
    const auto admin = ring.add("ops", "admin");
    const auto stream_only = ring.add("acme", "stream");
    config::sluice_config cfg;
    cfg.auth.keys_file = ring.path;
    served s(cfg);
    REQUIRE(request_with(s.port, http::verb::post, "/v1/transcribe", bearer(acme), call_wav_bytes()).status == 200);
    int st = 0;
    const auto mine = get_json(s.port, "/v1/calls", bearer(acme), st);
    REQUIRE(st == 200);
    REQUIRE(mine["calls"].size() == 1);
    CHECK(mine["calls"][0]["tenant"] == "acme");
    const std::string id = mine["calls"][0]["id"];
    get_json(s.port, "/v1/calls/" + id, bearer(acme), st);
    CHECK(st == 200);
    const auto theirs = get_json(s.port, "/v1/calls", bearer(globex), st);
    CHECK(st == 200);
    CHECK(theirs["calls"].empty());
    const auto peek = get_json(s.port, "/v1/calls/" + id, bearer(globex), st);
    CHECK(st == 404);
    CHECK(peek == get_json(s.port, "/v1/calls/no-such-call", bearer(globex), st));  // nothing tells them apart
    get_json(s.port, "/v1/calls?tenant=acme", bearer(globex), st);
    CHECK(st == 403);
    const auto all = get_json(s.port, "/v1/calls", bearer(admin), st);
    CHECK(st == 200);
    CHECK(all["calls"].size() == 1);
    const auto none = get_json(s.port, "/v1/calls?tenant=globex", bearer(admin), st);
    CHECK(st == 200);
    CHECK(none["calls"].empty());
    get_json(s.port, "/v1/calls/" + id, bearer(admin), st);
    CHECK(st == 200);
    get_json(s.port, "/v1/calls", bearer(stream_only), st);
    CHECK(st == 403);
    get_json(s.port, "/v1/calls", {}, st);
    CHECK(st == 401);
  }

  TEST_CASE("WS /v1/events: a tenant's subscriber gets its call's call_start, finals and call_end, nothing of another tenant's") {
    keyring ring;
    const auto acme = ring.add("acme", "stream,read");
    const auto globex = ring.add("globex", "stream,read");
    const auto stream_only = ring.add("globex", "stream");
    config::sluice_config cfg;
    cfg.auth.keys_file = ring.path;
    served s(cfg);
    stepped_stream refused(s.port);
    CHECK(refused.open("/v1/events", bearer(stream_only)) == 403);
    stepped_stream bad(s.port);
    CHECK(bad.open("/v1/events?tenant=acme", bearer(globex)) == 403);
    stepped_stream g(s.port);
    REQUIRE(g.open("/v1/events", bearer(globex)) == 101);
    stepped_stream a(s.port);
    REQUIRE(a.open("/v1/events?token=" + acme, {}) == 101);
    // acme's upload first, then globex's: globex's subscriber would see acme's updates first if
    // the filter leaked them.
    const auto up_a = request_with(s.port, http::verb::post, "/v1/transcribe", bearer(acme), call_wav_bytes());
    REQUIRE(up_a.status == 200);
    const auto up_g = request_with(s.port, http::verb::post, "/v1/transcribe", bearer(globex), call_wav_bytes());
    REQUIRE(up_g.status == 200);
    int st = 0;
    const std::string acme_id = get_json(s.port, "/v1/calls", bearer(acme), st)["calls"][0]["id"];
    const std::string globex_id = get_json(s.port, "/v1/calls", bearer(globex), st)["calls"][0]["id"];
    // Read each subscriber up to its call's call_end.
    auto read_call = [](stepped_stream& ws) {
      std::vector<json> got;
      for (;;) {
        auto m = ws.read_next();
        REQUIRE(m.has_value());
        got.push_back(*m);
        if ((*m)["type"] == "call_end") return got;
      }
    };
    const auto ga = read_call(a);
    const auto gg = read_call(g);
    for (const auto* got : {&ga, &gg}) {
      REQUIRE(got->size() >= 3);
      CHECK(got->front()["type"] == "call_start");
      CHECK(got->front()["source"] == "upload");
      CHECK(got->front()["channels"] == json({"agent", "customer"}));
      CHECK(got->back()["reason"] == "completed");
    }
    for (const auto& m : ga) CHECK(m["call"] == acme_id);
    for (const auto& m : gg) CHECK(m["call"] == globex_id);
    // The finals streamed are the finals the call keeps.
    const auto call = get_json(s.port, "/v1/calls/" + acme_id, bearer(acme), st);
    std::vector<std::string> streamed, kept;
    for (const auto& m : ga)
      if (m["type"] == "final" && m["channel"] == 1 && !m["text"].get<std::string>().empty()) streamed.push_back(m["text"]);
    kept = call_texts(call, 1);
    CHECK(!kept.empty());
    CHECK(streamed == kept);
  }

  TEST_CASE("WS /v1/events?call=ID gets that call only") {
    served s;
    auto& reg = s.server->calls();
    net::calls::call_start cs;
    cs.source = "stream";
    cs.channel_labels = {"mono"};
    const auto x = reg.begin(cs);
    const auto y = reg.begin(cs);
    stepped_stream only(s.port);
    REQUIRE(only.open("/v1/events?call=" + x, {}) == 101);
    stepped_stream all(s.port);
    REQUIRE(all.open("/v1/events", {}) == 101);
    // The session subscribes once the upgrade is answered; `all` proves it by its first message
    // below, and `only` was subscribed before it.
    actors::transcript_event ev;
    ev.is_final = true;
    ev.text = "for y";
    reg.result(y, 0, ev);
    reg.end(y, "hangup");
    ev.text = "for x";
    reg.result(x, 0, ev);
    reg.end(x, "hangup");
    const auto a1 = all.read_next();
    REQUIRE(a1.has_value());
    CHECK((*a1)["call"] == y);
    const auto o1 = only.read_next();
    const auto o2 = only.read_next();
    REQUIRE(o1.has_value());
    REQUIRE(o2.has_value());
    CHECK((*o1)["type"] == "final");
    CHECK((*o1)["call"] == x);
    CHECK((*o1)["text"] == "for x");
    CHECK((*o1)["label"] == "mono");
    CHECK((*o2)["type"] == "call_end");
    CHECK((*o2)["call"] == x);
  }
}

TEST_SUITE("calls api") {
  TEST_CASE("a /v1/events client that stops reading is dropped and its connection closed, the ingest never waits") {
    config::sluice_config cfg;
    cfg.calls.subscriber_queue = 2;
    served s(cfg);
    stepped_stream idle(s.port);
    REQUIRE(idle.open("/v1/events", {}) == 101);
    auto& reg = s.server->calls();
    net::calls::call_start cs;
    cs.source = "stream";
    cs.channel_labels = {"mono"};
    const auto id = reg.begin(cs);
    actors::transcript_event big;
    big.text = std::string(64 * 1024, 'a');  // fills the socket's buffers in a few hundred updates
    // The client reads nothing: once the socket is full a write stays pending, 2 updates wait,
    // and the next one drops the subscriber. Every call below returns (no waiting on the client).
    constexpr int cap = 20000;  // 1.3 GB of updates: far past any socket buffer
    int sent = 0;
    while (reg.stats().subscribers_dropped == 0 && sent < cap) {
      reg.result(id, 0, big);
      ++sent;
    }
    REQUIRE(reg.stats().subscribers_dropped == 1);
    CHECK(reg.stats().subscribers == 0);
    MESSAGE("updates published before the subscriber was dropped: " << sent);
    // The client now reads what had reached it, then the end of the connection.
    int got = 0;
    while (idle.read_next()) ++got;
    CHECK(got < sent);
    CHECK(reg.get(id)->live);  // the call itself is untouched
  }
}

TEST_SUITE("calls api") {
  TEST_CASE("with calls.store on, the calls of a served engine are listed again after the server restarts") {
    temp_dir dir;
    config::sluice_config cfg;
    cfg.calls.store = true;
    cfg.calls.data_dir = dir.file("data");
    json before;
    {
      served s(cfg);
      REQUIRE(request_with(s.port, http::verb::post, "/v1/transcribe", {}, call_wav_bytes()).status == 200);
      int st = 0;
      const auto list = get_json(s.port, "/v1/calls", {}, st);
      REQUIRE(list["calls"].size() == 1);
      before = get_json(s.port, "/v1/calls/" + list["calls"][0]["id"].get<std::string>(), {}, st);
      REQUIRE(st == 200);
      CHECK(s.server->call_store() != nullptr);
    }  // the server stops: its store writes what is queued
    CHECK(std::filesystem::exists(dir.file("data/calls.sqlite")));
    served again(cfg);
    int st = 0;
    const auto list = get_json(again.port, "/v1/calls", {}, st);
    REQUIRE(list["calls"].size() == 1);
    const auto after = get_json(again.port, "/v1/calls/" + before["id"].get<std::string>(), {}, st);
    REQUIRE(st == 200);
    CHECK(after["source"] == "upload");
    CHECK(after["end_reason"] == "completed");
    CHECK(after["began_at"] == before["began_at"]);
    CHECK(after["ended_at"] == before["ended_at"]);
    CHECK(after["channels"] == before["channels"]);
  }
}
