// The call registry (net/calls/call_registry.hpp) alone: what a call keeps, the bound on ended
// calls, newest-first listing, and the live-update subscriptions: filters, order, a subscriber
// that falls behind is dropped with a reason while the ingest and the others go on, the wake
// runs outside the registry's lock.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "net/calls/call_json.hpp"
#include "net/calls/call_registry.hpp"

using namespace sluice;
using namespace sluice::net::calls;

namespace {

actors::transcript_event final_of(const std::string& text, int64_t start_ms, int64_t end_ms, int64_t utt = 0) {
  actors::transcript_event ev;
  ev.is_final = true;
  ev.text = text;
  ev.utterance = utt;
  ev.start_ms = start_ms;
  ev.end_ms = end_ms;
  ev.words.push_back({text, start_ms, end_ms, 0.5f});
  return ev;
}

actors::transcript_event partial_of(const std::string& text) {
  actors::transcript_event ev;
  ev.text = text;
  return ev;
}

call_start start_of(const std::string& tenant, std::vector<std::string> labels = {"agent", "customer"}) {
  call_start s;
  s.source = "stream";
  s.tenant = tenant;
  s.channel_labels = std::move(labels);
  return s;
}

std::vector<update_kind> kinds_of(const std::vector<call_update>& us) {
  std::vector<update_kind> out;
  for (const auto& u : us) out.push_back(u.kind);
  return out;
}

}  // namespace

TEST_SUITE("calls registry") {
  TEST_CASE("a call keeps its channels' finals, newest partial, events, metadata and end reason") {
    call_registry reg;
    auto s = start_of("acme");
    s.metadata = {{"from", "+100"}};
    const auto id = reg.begin(s);
    reg.result(id, 1, partial_of("hel"));
    reg.result(id, 1, final_of("hello", 100, 600));
    reg.result(id, 0, partial_of("goo"));
    reg.result(id, 7, final_of("nowhere", 0, 1));  // no channel 7: ignored
    reg.event(id, call_event{"dtmf", 0, 1500, {{"digit", "5"}}});
    reg.update_metadata(id, {{"to", "+200"}});
    reg.end(id, "hangup");
    reg.result(id, 0, final_of("after the end", 0, 1));  // ignored: ended
    const auto c = reg.get(id);
    REQUIRE(c.has_value());
    CHECK_FALSE(c->live);
    CHECK(c->end_reason == "hangup");
    REQUIRE(c->channels.size() == 2);
    CHECK(c->channels[0].label == "agent");
    CHECK(c->channels[0].finals.empty());
    CHECK(c->channels[0].partial == "goo");
    REQUIRE(c->channels[1].finals.size() == 1);
    CHECK(c->channels[1].finals[0].text == "hello");
    CHECK(c->channels[1].partial.empty());
    REQUIRE(c->events.size() == 1);
    CHECK(c->events[0].data["digit"] == "5");
    CHECK(c->start.metadata == nlohmann::json({{"from", "+100"}, {"to", "+200"}}));
    CHECK(c->ended >= c->began);
  }

  TEST_CASE("a call keeps at most max_events_per_call events: later ones are counted in events_dropped, not kept or published") {
    call_registry reg(10, 3);
    subscription_filter f;
    auto sub = reg.subscribe(f, 100, overflow::drop_subscriber, [] {});
    const auto id = reg.begin(start_of("acme"));
    const auto other = reg.begin(start_of("acme"));
    for (int i = 0; i < 5; ++i) reg.event(id, call_event{"dtmf", 0, 100 * i, {{"digit", std::to_string(i)}}});
    reg.event(other, call_event{"dtmf", 0, 0, {{"digit", "9"}}});  // another call has its own count
    const auto c = reg.get(id);
    REQUIRE(c.has_value());
    REQUIRE(c->events.size() == 3);
    CHECK(c->events[0].data["digit"] == "0");  // the first three are the ones kept
    CHECK(c->events[2].data["digit"] == "2");
    CHECK(c->events_dropped == 2);
    CHECK(call_json(*c)["events"].size() == 3);
    CHECK(call_json(*c)["events_dropped"] == 2);
    CHECK(call_summary_json(*c)["events_dropped"] == 2);
    const auto o = reg.get(other);
    REQUIRE(o.has_value());
    CHECK(o->events.size() == 1);
    CHECK(o->events_dropped == 0);
    CHECK_FALSE(call_json(*o).contains("events_dropped"));
    // Subscribers saw the kept events only: 2 call_starts, 3 + 1 events.
    const auto got = sub->take();
    CHECK(std::count_if(got.begin(), got.end(), [](const call_update& u) { return u.kind == update_kind::event; }) == 4);
  }

  TEST_CASE("only max_recent_ended ended calls stay (the oldest go), live ones always, lists are newest first") {
    call_registry reg(2);
    const auto live = reg.begin(start_of("a"));
    std::vector<call_id> ended;
    for (int i = 0; i < 3; ++i) {
      ended.push_back(reg.begin(start_of("a")));
      reg.end(ended.back(), "done");
    }
    CHECK(reg.get(live).has_value());
    CHECK_FALSE(reg.get(ended[0]).has_value());
    CHECK(reg.get(ended[1]).has_value());
    CHECK(reg.get(ended[2]).has_value());
    const auto all = reg.list();
    REQUIRE(all.size() == 3);
    CHECK(all[0].id == ended[2]);
    CHECK(all[1].id == ended[1]);
    CHECK(all[2].id == live);
    call_registry::query q;
    q.live_only = true;
    const auto lives = reg.list(q);
    REQUIRE(lives.size() == 1);
    CHECK(lives[0].id == live);
    q = {};
    q.limit = 1;
    const auto one = reg.list(q);
    REQUIRE(one.size() == 1);
    CHECK(one[0].id == ended[2]);
    const auto counts = reg.stats();
    CHECK(counts.live == 1);
    CHECK(counts.ended == 2);
  }

  TEST_CASE("ids differ between registries and do not follow one another's prefix") {
    call_registry a, b;
    const auto ia = a.begin(start_of("t"));
    const auto ib = b.begin(start_of("t"));
    CHECK(ia != ib);
    CHECK(ia.substr(0, ia.find('-')) != ib.substr(0, ib.find('-')));
  }

  TEST_CASE("a subscriber gets its call's updates in order: call_start, partial, final, event, call_end") {
    call_registry reg;
    int wakes = 0;
    subscription_filter f;
    auto sub = reg.subscribe(f, 100, overflow::drop_subscriber, [&] { ++wakes; });
    const auto id = reg.begin(start_of("acme"));
    CHECK(wakes == 1);  // the first update lands in an empty queue
    reg.result(id, 0, partial_of("he"));
    reg.result(id, 0, final_of("hello", 0, 500));
    reg.event(id, call_event{"hold", -1, 10, {}});
    reg.update_metadata(id, {{"x", 1}});  // not a live-event kind: not queued
    reg.end(id, "hangup");
    CHECK(wakes == 1);  // the queue was never empty again
    const auto got = sub->take();
    CHECK(kinds_of(got) == std::vector<update_kind>{update_kind::call_start, update_kind::partial, update_kind::final,
                                                    update_kind::event, update_kind::call_end});
    CHECK(got[2].label == "agent");
    CHECK(got[2].result.text == "hello");
    REQUIRE(got[4].call != nullptr);
    CHECK(got[4].call->channels[0].finals.size() == 1);
    CHECK(got[4].call->end_reason == "hangup");
    // The wire form of each.
    CHECK(update_json(got[0])["type"] == "call_start");
    CHECK(update_json(got[0])["channels"] == nlohmann::json({"agent", "customer"}));
    CHECK(update_json(got[2])["words"].size() == 1);
    CHECK(update_json(got[4])["reason"] == "hangup");
    reg.result(id, 0, final_of("late", 0, 1));  // ended: nothing more
    CHECK(sub->take().empty());
  }

  TEST_CASE("filters: by call id, by tenant, by kind") {
    call_registry reg;
    const auto a = reg.begin(start_of("acme"));
    subscription_filter by_call;
    by_call.call = a;
    subscription_filter by_tenant;
    by_tenant.tenant = "globex";
    subscription_filter finals_only;
    finals_only.kinds = static_cast<uint8_t>(update_kind::final);
    auto s_call = reg.subscribe(by_call, 100, overflow::drop_subscriber, nullptr);
    auto s_tenant = reg.subscribe(by_tenant, 100, overflow::drop_subscriber, nullptr);
    auto s_finals = reg.subscribe(finals_only, 100, overflow::drop_subscriber, nullptr);
    const auto b = reg.begin(start_of("globex"));
    reg.result(a, 0, final_of("for acme", 0, 1));
    reg.result(b, 0, partial_of("for glo"));
    reg.result(b, 0, final_of("for globex", 0, 1));
    const auto got_call = s_call->take();
    REQUIRE(got_call.size() == 1);
    CHECK(got_call[0].result.text == "for acme");
    const auto got_tenant = s_tenant->take();
    CHECK(kinds_of(got_tenant) == std::vector<update_kind>{update_kind::call_start, update_kind::partial, update_kind::final});
    for (const auto& u : got_tenant) CHECK(u.id == b);
    const auto got_finals = s_finals->take();
    REQUIRE(got_finals.size() == 2);
    CHECK(got_finals[0].result.text == "for acme");
    CHECK(got_finals[1].result.text == "for globex");
  }

  TEST_CASE("a subscriber that falls behind is dropped with a reason, the ingest and the other subscribers go on") {
    call_registry reg;
    int slow_wakes = 0;
    auto slow = reg.subscribe({}, 3, overflow::drop_subscriber, [&] { ++slow_wakes; });
    auto keeper = reg.subscribe({}, 1000, overflow::drop_subscriber, nullptr);
    const auto id = reg.begin(start_of("acme"));
    for (int i = 0; i < 10; ++i) reg.result(id, 0, partial_of("p" + std::to_string(i)));
    // The 4th update found 3 waiting: dropped then, and woken to learn it.
    CHECK(slow->dropped());
    CHECK(slow->drop_reason().find("fell behind") != std::string::npos);
    CHECK(slow_wakes == 2);
    CHECK(slow->take().empty());
    CHECK(reg.stats().subscribers == 1);
    CHECK(reg.stats().subscribers_dropped == 1);
    CHECK(keeper->take().size() == 11);
    CHECK(reg.get(id)->channels[0].partial == "p9");
  }

  TEST_CASE("overflow::drop_update drops and counts the updates that find the queue full, and keeps the subscriber") {
    call_registry reg;
    auto sub = reg.subscribe({}, 2, overflow::drop_update, nullptr);
    const auto id = reg.begin(start_of("acme"));
    for (int i = 0; i < 5; ++i) reg.result(id, 0, partial_of("p"));
    CHECK_FALSE(sub->dropped());
    CHECK(sub->lost() == 4);
    CHECK(sub->take().size() == 2);
    reg.end(id, "done");
    CHECK(sub->take().size() == 1);
  }

  TEST_CASE("the wake runs outside the registry's lock: it may call the registry") {
    call_registry reg;
    std::size_t seen = 0;
    auto sub = reg.subscribe({}, 10, overflow::drop_subscriber, [&] { seen = reg.list().size(); });
    reg.begin(start_of("acme"));
    CHECK(seen == 1);
  }

  TEST_CASE("a cancelled subscription gets nothing more and is forgotten") {
    call_registry reg;
    auto sub = reg.subscribe({}, 10, overflow::drop_subscriber, nullptr);
    sub->cancel();
    reg.begin(start_of("acme"));
    CHECK(sub->take().empty());
    CHECK(reg.stats().subscribers == 0);
  }

  TEST_CASE("restored calls keep their ids, are listed by when they began, and count against the bound") {
    call_registry reg(2);
    std::vector<call_record> stored(3);
    const auto t0 = std::chrono::system_clock::now() - std::chrono::hours(1);
    for (int i = 0; i < 3; ++i) {
      stored[i].id = "old-" + std::to_string(i);
      stored[i].live = false;
      stored[i].end_reason = "hangup";
      stored[i].began = t0 + std::chrono::minutes(i);
      stored[i].ended = stored[i].began + std::chrono::seconds(30);
    }
    std::swap(stored[0], stored[2]);  // not in order
    reg.restore(stored);
    const auto l = reg.list();
    REQUIRE(l.size() == 2);
    CHECK(l[0].id == "old-2");
    CHECK(l[1].id == "old-1");
    const auto fresh = reg.begin(start_of("a"));
    CHECK(reg.list()[0].id == fresh);
  }
}
