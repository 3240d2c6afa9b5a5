// GET /v1/placement serves the engine's placement plan as JSON: the same lanes, devices and
// expert placement the engine chose at start (and runs: engine::lanes() with lanes = -1).
#include "tests/net/net_test_util.hpp"

#include <sched.h>

#include <thread>

using namespace sluice;
using namespace sluice::test;

TEST_SUITE("placement endpoint") {
  TEST_CASE("GET /v1/placement is the engine's plan as JSON") {
    config::sluice_config cfg;
    cfg.engine.lanes = -1;  // run what the plan says
    served s(cfg);
    const auto& plan = s.engine->placement();
    const auto r = http_request(s.port, http::verb::get, "/v1/placement");
    REQUIRE(r.status == 200);
    CHECK(r.content_type == "application/json");
    const auto j = json::parse(r.body, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    CHECK(j["lanes"].get<int>() == plan.n_lanes());
    CHECK(j["lanes"].get<int>() == s.engine->lanes());
    CHECK(j["measured"].get<bool>() == false);  // the test config skips the probe
    CHECK(j["experts_local"].get<bool>());      // one CPU: every expert local
    REQUIRE(j["devices"].size() == 1);
    const auto& cpu = j["devices"][0];
    CHECK(cpu["kind"] == "cpu");
    cpu_set_t allowed;  // the cores this process may use
    CPU_ZERO(&allowed);
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    CHECK(cpu["units"].get<int>() == CPU_COUNT(&allowed));
    CHECK(cpu["experts_per_layer"].get<int>() == s.engine->resources().model->arch().n_routed);
    REQUIRE(j["lane_plan"].size() == static_cast<std::size_t>(plan.n_lanes()));
    double shares = 0;
    for (const auto& l : j["lane_plan"]) shares += l["share"].get<double>();
    CHECK(shares == doctest::Approx(1.0));
  }
}
