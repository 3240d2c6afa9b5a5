// The tenant watcher's own poll (postproc.tenants_poll_ms), under CAF's deterministic test
// coordinator: the poll is a delayed message, fired here by trigger_timeout(), never waited for.
// A tenant file written after start-up takes effect at the next poll and not before, a later
// change at the poll after (the watcher schedules itself again), a broken file keeps the last good
// version, and without a tenant directory nothing is ever scheduled.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "actors/tenant_watcher.hpp"
#include "moe/postproc/tenant_store.hpp"
#include "tests/actors/deterministic_system.hpp"
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;

namespace {

// Replaced whole by rename, with a modification time later than any earlier write's.
void write_tenant(const std::string& path, const std::string& text, int tick_s) {
  const std::string next = path + ".next";
  std::ofstream(next, std::ios::trunc) << text;
  std::filesystem::last_write_time(next, std::filesystem::last_write_time(next) + std::chrono::seconds(tick_s));
  std::filesystem::rename(next, path);
}

std::vector<std::string> hotwords_of(const moe::postproc::tenant_store& store, const std::string& id) {
  auto p = store.get(id);
  return p ? p->hotwords : std::vector<std::string>{};
}

}  // namespace

TEST_SUITE("engine") {
  TEST_CASE("tenant watcher: its own poll picks up a new file, then a change, keeps the last good list") {
    test::temp_dir tmp;
    const auto dir = tmp.file("tenants");
    std::filesystem::create_directories(dir);
    auto cfg = test::base_config();
    cfg.postproc.tenants_dir = dir;
    cfg.postproc.tenants_poll_ms = 1000;
    auto res = test::resources(cfg);
    REQUIRE(res->tenants->ids().empty());
    test::deterministic_system det;
    auto watcher = det.sys.spawn(actors::tenant_watcher, res);
    // The system waits for every actor at its end: the watcher is stopped on every path out.
    struct stop {
      caf::actor a;
      test::deterministic_system& d;
      ~stop() {
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
        d.sched.run();
      }
    } stopper{watcher, det};
    det.sched.run();
    REQUIRE(det.sched.has_pending_timeout());

    const auto file = dir + "/acme.toml";
    write_tenant(file, "hotwords = [\"karpinski 5\"]\n", 1);
    det.sched.run();
    CHECK(res->tenants->get("acme") == nullptr);  // written, not yet polled
    REQUIRE(det.sched.trigger_timeout());
    det.sched.run();
    CHECK(hotwords_of(*res->tenants, "acme") == std::vector<std::string>{"karpinski 5"});

    write_tenant(file, "hotwords = [\"vanderbilt 4\"]\n", 2);
    REQUIRE(det.sched.has_pending_timeout());  // scheduled itself again
    REQUIRE(det.sched.trigger_timeout());
    det.sched.run();
    CHECK(hotwords_of(*res->tenants, "acme") == std::vector<std::string>{"vanderbilt 4"});

    write_tenant(file, "hotwords = [\"unclosed\"\n", 3);
    REQUIRE(det.sched.trigger_timeout());
    det.sched.run();
    CHECK(hotwords_of(*res->tenants, "acme") == std::vector<std::string>{"vanderbilt 4"});
    CHECK(det.sched.has_pending_timeout());
  }

  TEST_CASE("tenant watcher: without a tenant directory nothing is scheduled") {
    auto cfg = test::base_config();
    cfg.postproc.tenants_dir = "";
    cfg.postproc.tenants_poll_ms = 1000;
    auto res = test::resources(cfg);
    test::deterministic_system det;
    auto watcher = det.sys.spawn(actors::tenant_watcher, res);
    det.sched.run();
    CHECK_FALSE(det.sched.has_pending_timeout());
    caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
    det.sched.run();
  }
}
