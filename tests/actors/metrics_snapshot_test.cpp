// engine::snapshot() (what /metrics, /v1/actors and the dashboard serve) reads the snapshot the
// metrics actor last published and never waits on an actor: while the metrics actor cannot run
// at all, a snapshot still comes back at once with the last published figures.
#include "tests/actors/engine_test_util.hpp"

#include <future>
#include <string>

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
}
