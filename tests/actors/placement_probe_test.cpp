// The start-up probe measures real recognizer steps on this machine's cores and the plan built
// from it is a CPU plan with every expert local; a zero budget skips the probe (nominal plan).
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/audio_tools.hpp"
#include "tests/common/poll_until.hpp"

#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/cpu_affinity.hpp"
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
    cfg.engine.placement_cache_hours = 0;  // measured now, not read from a kept probe
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

  TEST_CASE("a kept probe is reused within its max age, and measured again when stale, corrupt or of another key") {
    auto res = test::resources(test::base_config());
    test::temp_dir tmp;
    const probe_cache cache{tmp.file("cache"), std::chrono::hours(1)};
    const std::chrono::milliseconds budget(60);
    const auto path = probe_cache_file(cache, *res->recognizer, budget);
    REQUIRE_FALSE(path.empty());
    CHECK(path.rfind(tmp.file("cache"), 0) == 0);
    const int cores = static_cast<int>(allowed_cpus().size());
    std::filesystem::create_directories(tmp.file("cache"));
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
    // Speeds no probe measures: a plan that carries them read the file instead of measuring.
    nlohmann::json kept{{"key", probe_key(*res->recognizer, budget)},
                        {"written_unix_s", now},
                        {"device", {{"units", cores}, {"speed_one", 1234.5}, {"speed_all", 1234.5 * cores}}}};
    const auto write = [&](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };
    const auto plan_speed = [&] {
      auto plan = plan_this_machine(*res->recognizer, budget, cache);
      REQUIRE(plan.has_value());
      CHECK(plan->measured);
      REQUIRE(plan->devices.size() == 1);
      return plan->devices[0].speed_one;
    };

    write(kept.dump());
    CHECK(plan_speed() == 1234.5);
    CHECK(plan_speed() == 1234.5);  // read, not replaced

    // Another budget is another key, another file.
    CHECK(probe_cache_file(cache, *res->recognizer, std::chrono::milliseconds(90)) != path);

    // Stale (written two hours ago, kept one hour): measured, and the stale speeds never come back.
    auto stale = kept;
    stale["written_unix_s"] = now - 2 * 3600;
    write(stale.dump());
    CHECK(plan_speed() != 1234.5);
    CHECK(plan_speed() != 1234.5);

    // Another machine's key (a change of CPU or cores), other units, and text that is not JSON.
    auto foreign = kept;
    foreign["key"] = "sluice-placement-probe/1;cpu=some other CPU";
    write(foreign.dump());
    CHECK(plan_speed() != 1234.5);
    auto units = kept;
    units["device"]["units"] = cores + 1;
    write(units.dump());
    CHECK(plan_speed() != 1234.5);
    write("{ not json");
    CHECK(plan_speed() > 0);

    // Off (max age 0, or no directory): no file name, nothing read.
    CHECK(probe_cache_file(probe_cache{tmp.file("cache"), std::chrono::seconds(0)}, *res->recognizer, budget).empty());
    CHECK(probe_cache_file(probe_cache{}, *res->recognizer, budget).empty());
    CHECK(probe_cache::user_default(0).dir.empty());
  }

  TEST_CASE("a probe is kept with what it measured, unless other processes used the cores meanwhile") {
    auto res = test::resources(test::base_config());
    const auto cpus = allowed_cpus();
    const std::chrono::milliseconds budget(90);
    {
      // One busy child process per allowed core for the whole probe: other processes' share is
      // far above what is kept, and nothing is written.
      test::temp_dir tmp;
      const probe_cache cache{tmp.file("cache"), std::chrono::hours(1)};
      // Spawned shells, not forks: a fork of this multi-threaded process would exit at once
      // under ThreadSanitizer (its die_after_fork).
      std::vector<pid_t> children;
      for (std::size_t i = 0; i < cpus.size(); ++i) {
        pid_t pid = -1;
        char sh[] = "sh", c[] = "-c", loop[] = "while :; do :; done";
        char* argv[] = {sh, c, loop, nullptr};
        REQUIRE(::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv, environ) == 0);
        children.push_back(pid);
      }
      bool measured = false;
      const double share = others_busy_share(cpus, [&] {
        auto plan = plan_this_machine(*res->recognizer, budget, cache);
        measured = plan.has_value() && plan->measured;
      });
      for (pid_t pid : children) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      MESSAGE("other processes' share of the cores with a busy child per core: " << share);
      CHECK(measured);
      CHECK(share > max_others_share_kept);
      CHECK_FALSE(std::filesystem::exists(probe_cache_file(cache, *res->recognizer, budget)));
    }
    {
      // Without them: kept if this machine was quiet enough (ctest runs other suites beside this
      // one, so it may not be; said, not counted as a pass of the contents check).
      test::temp_dir tmp;
      const probe_cache cache{tmp.file("cache"), std::chrono::hours(1)};
      auto plan = plan_this_machine(*res->recognizer, budget, cache);
      REQUIRE(plan.has_value());
      const auto path = probe_cache_file(cache, *res->recognizer, budget);
      if (!std::filesystem::exists(path)) {
        MESSAGE("not kept: other processes were busy during the probe");
      } else {
        const auto kept = nlohmann::json::parse(std::ifstream(path));
        CHECK(kept["key"].get<std::string>() == probe_key(*res->recognizer, budget));
        CHECK(kept["device"]["units"].get<int>() == static_cast<int>(cpus.size()));
        CHECK(kept["device"]["speed_one"].get<double>() == plan->devices[0].speed_one);
        CHECK(kept["device"]["speed_all"].get<double>() == plan->devices[0].speed_all);
      }
    }
  }

  TEST_CASE("a cache directory that cannot be written still gives a measured plan") {
    auto res = test::resources(test::base_config());
    test::temp_dir tmp;
    std::ofstream(tmp.file("a-file")) << "x";  // a file where the directory should be
    const probe_cache cache{tmp.file("a-file") + "/sub", std::chrono::hours(1)};
    auto plan = plan_this_machine(*res->recognizer, std::chrono::milliseconds(60), cache);
    REQUIRE(plan.has_value());
    CHECK(plan->measured);
    CHECK(plan->devices[0].speed_one > 0);
  }
}
