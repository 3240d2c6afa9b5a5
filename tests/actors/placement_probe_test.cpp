// The start-up probe measures real recognizer steps on this machine's cores and the plan built
// from it is a CPU plan with every expert local; a zero budget skips the probe (nominal plan).
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"

#include <sched.h>

#include <cmath>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/placement_probe.hpp"

using namespace sluice;
using namespace sluice::actors;

TEST_SUITE("placement probe") {
  TEST_CASE("the probe measures frames per second on one core and on all of them") {
    auto res = test::resources(test::base_config());
    const auto d = probe_cpu(*res->recognizer, 2, std::chrono::milliseconds(150));
    CHECK(d.kind == "cpu");
    CHECK(d.units == 2);
    CHECK(std::isfinite(d.speed_one));
    CHECK(d.speed_one > 0);
    CHECK(std::isfinite(d.speed_all));
    CHECK(d.speed_all > 0);
    MESSAGE("probe: " << d.speed_one << " frames/s on one core, " << d.speed_all << " on 2");
    auto plan = moe::plan_placement({d}, res->model->arch().n_routed);
    REQUIRE(plan.has_value());
    CHECK(plan->n_lanes() >= 1);
    CHECK(plan->n_lanes() <= 2);
    CHECK(plan->experts_local);
  }

  TEST_CASE("a zero budget gives the nominal plan: a lane per core, marked not measured") {
    auto res = test::resources(test::base_config());
    auto plan = plan_this_machine(*res->recognizer, std::chrono::milliseconds(0));
    REQUIRE(plan.has_value());
    cpu_set_t allowed;  // the cores this process may use (the machine's unless a taskset or cpuset says less)
    CPU_ZERO(&allowed);
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    const int cores = CPU_COUNT(&allowed);
    CHECK_FALSE(plan->measured);
    CHECK(plan->n_lanes() == cores);
    const auto j = nlohmann::json::parse(placement_json(*plan));
    CHECK(j["lanes"].get<int>() == cores);
    CHECK(j["measured"].get<bool>() == false);
    CHECK(describe(*plan).find(std::to_string(cores) + " lanes") == 0);
  }

  TEST_CASE("an engine started with a probe budget serves a measured plan") {
    auto cfg = test::base_config();
    cfg.engine.placement_probe_ms = 150;
    auto e = engine::start(test::resources(cfg));
    CHECK(e->placement().measured);
    REQUIRE(e->placement().devices.size() == 1);
    CHECK(e->placement().devices[0].speed_one > 0);
    CHECK(e->lanes() == e->placement().n_lanes());  // the default (lanes = -1) runs the plan's count
  }

  TEST_CASE("[engine] lanes = 0 runs the batcher and expert actors whatever the plan says") {
    auto cfg = test::base_config();
    cfg.engine.lanes = 0;
    auto e = engine::start(test::resources(cfg));
    CHECK(e->placement().n_lanes() >= 1);
    CHECK(e->lanes() == 0);
    // The metrics actor lists who reports: the batcher and each expert actor, no lane.
    nlohmann::json snap;
    const auto names = [&] {
      std::set<std::string> out;
      snap = nlohmann::json::parse(e->fresh_snapshot(), nullptr, false);
      if (!snap.is_discarded())
        for (const auto& a : snap["actors"]) out.insert(a["name"].get<std::string>());
      return out;
    };
    REQUIRE(test::poll_until([&] {
      const auto n = names();
      return n.count("batcher") == 1 && n.count("expert/0") == 1;
    }));
    CHECK(names().count("lane/0") == 0);
  }
}
