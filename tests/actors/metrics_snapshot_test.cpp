// engine::snapshot() (what /metrics, /v1/actors and the dashboard serve) reads the snapshot the
// metrics actor last published and never waits on an actor: while the metrics actor cannot run
// at all, a snapshot still comes back at once with the last published figures.
#include "tests/actors/engine_test_util.hpp"

#include <future>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "actors/latency_histogram.hpp"
#include "tests/common/poll_until.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

// A report from a made-up actor, so the test can tell which reports a snapshot includes.
actor_report probe(const std::string& name) {
  actor_report r;
  r.name = name;
  r.kind = "probe";
  return r;
}

bool has(const std::string& snapshot, const std::string& name) {
  return snapshot.find("\"" + name + "\"") != std::string::npos;
}

}  // namespace

TEST_SUITE("metrics snapshot") {
  TEST_CASE("a snapshot while the metrics actor is blocked returns the last published state at once") {
    auto cfg = test::base_config();
    cfg.engine.scheduler_threads = 1;  // one scheduler thread: the blocker below holds it
    auto e = engine::start(test::resources(cfg));
    caf::anon_send(e->metrics(), probe("probe/before"));
    REQUIRE(test::poll_until([&] { return has(e->snapshot(), "probe/before"); }));

    // Hold the only scheduler thread until released: the metrics actor cannot take a message.
    std::promise<void> entered, release;
    std::shared_future<void> released = release.get_future().share();
    auto blocker = e->system().spawn([&entered, released](caf::event_based_actor*) -> caf::behavior {
      return {[&entered, released](report_atom) {
        entered.set_value();
        released.wait();
      }};
    });
    caf::anon_send(blocker, report_atom::value);
    entered.get_future().wait();
    caf::anon_send(e->metrics(), probe("probe/after"));  // queued behind the blocked thread

    const std::string snap = e->snapshot();  // would wait on the metrics actor if it asked it
    release.set_value();
    CHECK(has(snap, "probe/before"));
    CHECK_FALSE(has(snap, "probe/after"));
    // Once the thread is free, the metrics actor takes the queued report and publishes it.
    CHECK(test::poll_until([&] { return has(e->snapshot(), "probe/after"); }));
    caf::anon_send_exit(blocker, caf::exit_reason::user_shutdown);
  }

  TEST_CASE("fresh_snapshot asks the metrics actor and publishes what it answers") {
    auto cfg = test::base_config();
    cfg.engine.report_ms = 60000;  // the timer would not publish within the test
    auto e = engine::start(test::resources(cfg));
    caf::anon_send(e->metrics(), probe("probe/fresh"));
    // The report and the request come from different senders: poll until the answer has it.
    std::string fresh;
    REQUIRE(test::poll_until([&] { return has(fresh = e->fresh_snapshot(), "probe/fresh"); }));
    CHECK(has(e->snapshot(), "probe/fresh"));
  }

  TEST_CASE("before any channel, an engine's snapshot lists the four latency histograms, each with zero counts") {
    auto cfg = test::base_config();
    // The batcher, supervisor and expert actors report once when they start, with no latency;
    // no channel is ever opened here, so nothing observes one.
    cfg.engine.report_ms = 60000;
    auto e = engine::start(test::resources(cfg));
    nlohmann::json j;  // the metrics actor publishes its first snapshot when it starts
    REQUIRE(test::poll_until([&] { return (j = nlohmann::json::parse(e->snapshot(), nullptr, false)).contains("kinds"); }));
    for (const auto& [kind, key] : {std::pair{"channel", "partial_latency_ms"}, std::pair{"channel", "final_latency_ms"},
                                    std::pair{"batcher", "queue_wait_ms"}, std::pair{"batcher", "step_ms"}}) {
      CAPTURE(kind);
      CAPTURE(key);
      REQUIRE(j["kinds"].contains(kind));
      REQUIRE(j["kinds"][kind]["latency"].contains(key));
      const auto& h = j["kinds"][kind]["latency"][key];
      CHECK(h["count"] == 0);
      CHECK(h["counts"].size() == h["buckets_ms"].size() + 1);
      for (const auto& c : h["counts"]) CHECK(c == 0);
    }
    CHECK(j["kinds"]["channel"]["live"] == 0);
    CHECK(j["summary"]["channels_live"] == 0);
  }

  TEST_CASE("per tenant totals: each tenant's live channels, counters and latencies from its channels' reports only") {
    auto cfg = test::base_config();
    cfg.engine.report_ms = 60000;  // no channel of the engine's own reports meanwhile
    auto e = engine::start(test::resources(cfg));
    auto channel = [](const std::string& name, const std::string& tenant, double audio_ms, double finals) {
      actor_report r;
      r.name = name;
      r.kind = "channel";
      r.tenant = tenant;
      r.keys = {"audio_ms", "finals"};
      r.counts = {audio_ms, finals};
      return r;
    };
    auto a1 = channel("channel/a1", "acme", 1000, 1);
    latency_histogram slow;  // one final of acme's after 120 ms: the 150 ms bucket
    slow.add(120);
    a1.hist_keys = {std::string(latency_key::final_result)};
    a1.hists = {slow.counts()};
    a1.hist_sums = {slow.sum_ms()};
    // a1's last report as it stops, naming no tenant: it still counts for the tenant a1 was under.
    auto gone = channel("channel/a1", "", 100, 0);
    gone.gone = true;
    for (auto& r : {a1, channel("channel/a2", "acme", 500, 0), channel("channel/g1", "globex", 2000, 2),
                    channel("channel/x", "", 300, 1), gone, probe("probe/last")})
      caf::anon_send(e->metrics(), r);
    // One sender: the probe arrives after every report before it.
    nlohmann::json j;
    REQUIRE(test::poll_until([&] {
      const auto s = e->fresh_snapshot();
      return has(s, "probe/last") && !(j = nlohmann::json::parse(s, nullptr, false)).is_discarded();
    }));
    REQUIRE(j["tenants"].is_object());
    CHECK(j["tenants"].size() == 2);  // acme and globex: a channel without a tenant counts only engine-wide
    const auto& acme = j["tenants"]["acme"];
    CHECK(acme["live"] == 1);  // a1 gone, a2 live
    CHECK(acme["counters"]["audio_ms"] == 1600.0);  // 1000 + 100 (a1's last report) + 500
    CHECK(acme["counters"]["finals"] == 1.0);
    const auto& fin = acme["latency"][std::string(latency_key::final_result)];
    CHECK(fin["count"] == 1);
    CHECK(fin["p99_ms"] == 150.0);
    CHECK(acme["latency"][std::string(latency_key::partial)]["count"] == 0);
    const auto& globex = j["tenants"]["globex"];
    CHECK(globex["live"] == 1);
    CHECK(globex["counters"]["audio_ms"] == 2000.0);
    CHECK(globex["counters"]["finals"] == 2.0);
    CHECK(globex["latency"][std::string(latency_key::final_result)]["count"] == 0);
    // The engine's totals hold everyone's, the tenantless channel's too.
    CHECK(j["kinds"]["channel"]["live"] == 3);
    CHECK(j["kinds"]["channel"]["counters"]["audio_ms"] == 3900.0);
    CHECK(j["summary"]["finals"] == 4.0);
  }
}

TEST_SUITE("latency histogram") {
  TEST_CASE("waits of 20, 25, 30, 40 and 50 ms land in different buckets and read back as such") {
    const double waits[] = {20, 25, 30, 40, 50};
    std::vector<std::size_t> bucket_of;
    for (double w : waits) {
      latency_histogram h;
      h.add(w);
      CHECK(h.quantile_ms(0.99) == w);  // each is a bucket's upper bound
      for (std::size_t b = 0; b < latency_histogram::n_buckets; ++b)
        if (h.counts()[b] == 1) bucket_of.push_back(b);
    }
    REQUIRE(bucket_of.size() == 5);
    for (std::size_t i = 1; i < bucket_of.size(); ++i) CHECK(bucket_of[i] > bucket_of[i - 1]);
    latency_histogram h;
    h.add(21);  // just above 20: reported as the 25 ms bucket, not the 50 ms one
    CHECK(h.quantile_ms(0.5) == 25);
  }
}
