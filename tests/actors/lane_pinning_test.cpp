// Lane threads ([engine] pin_lanes, issue 11 point 2: "threads pinned where the OS allows"): each
// lane names its thread, and with one lane per core this process may use, each is pinned to a core
// of its own. What is checked is read back from the OS (/proc/self/task/<tid>/comm and
// sched_getaffinity of that thread), and the process's cores from /proc/self/status.
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"
#include "tests/common/proc_threads.hpp"

#include <pthread.h>
#include <sched.h>

#include <fstream>
#include <map>
#include <sstream>

#include "actors/cpu_affinity.hpp"
#include "actors/placement_probe.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {
// The CPUs of one thread, ascending.
std::vector<int> affinity_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(tid, sizeof set, &set) == 0);
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

// The process's CPUs as the kernel lists them in /proc/self/status ("Cpus_allowed_list: 0-1,3").
std::vector<int> process_cpus() {
  std::ifstream in("/proc/self/status");
  std::string line;
  std::vector<int> out;
  while (std::getline(in, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
    std::stringstream ss(line.substr(line.find(':') + 1));
    std::string part;
    while (std::getline(ss, part, ',')) {
      const auto dash = part.find('-');
      const int lo = std::stoi(part.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      for (int c = lo; c <= hi; ++c) out.push_back(c);
    }
  }
  return out;
}

// Threads of this process named sluice-lane-<i>, by i.
std::map<int, pid_t> lane_threads() {
  std::map<int, pid_t> out;
  for (const auto& t : test::threads_of_this_process())
    if (t.name.rfind("sluice-lane-", 0) == 0) out[std::stoi(t.name.substr(12))] = t.tid;
  return out;
}

std::unique_ptr<engine> start_with_lanes(int lanes, bool pin) {
  auto cfg = test::base_config();
  cfg.engine.lanes = lanes;
  cfg.engine.pin_lanes = pin;
  return engine::start(test::resources(cfg));
}

bool skip_single_core(const std::vector<int>& cpus) {
  if (cpus.size() >= 2) return false;
  MESSAGE("SKIPPED: this process may use one core only; pinning cannot be told from not pinning");
  return true;
}
}  // namespace

TEST_SUITE("lane pinning") {
  TEST_CASE("allowed_cpus lists the cores of /proc/self/status's Cpus_allowed_list") {
    const auto cpus = process_cpus();
    REQUIRE_FALSE(cpus.empty());
    CHECK(allowed_cpus() == cpus);
  }

  TEST_CASE("lane_cpu: with one lane per allowed core, lane i gets the i-th core, otherwise none is pinned") {
    const std::vector<int> cpus{2, 3, 6, 7};
    CHECK(lane_cpu(0, 4, cpus) == 2);
    CHECK(lane_cpu(2, 4, cpus) == 6);
    CHECK(lane_cpu(3, 4, cpus) == 7);
    CHECK(lane_cpu(0, 3, cpus) == -1);  // fewer lanes than cores
    CHECK(lane_cpu(0, 5, cpus) == -1);  // more
    CHECK(lane_cpu(4, 4, cpus) == -1);  // no such lane
  }

  TEST_CASE("one lane per allowed core, pin_lanes on: each lane's thread runs on its own core only") {
    const auto cpus = process_cpus();
    if (skip_single_core(cpus)) return;
    auto e = start_with_lanes(static_cast<int>(cpus.size()), true);
    REQUIRE(test::poll_until([&] { return lane_threads().size() == cpus.size(); }));
    for (const auto& [i, tid] : lane_threads()) {
      INFO("lane " << i << ", thread " << tid);
      CHECK(affinity_of(tid) == std::vector<int>{cpus[static_cast<std::size_t>(i)]});
    }
  }

  TEST_CASE("pin_lanes off, or fewer lanes than cores: lane threads keep every allowed core") {
    const auto cpus = process_cpus();
    if (skip_single_core(cpus)) return;
    {
      auto e = start_with_lanes(static_cast<int>(cpus.size()), false);
      REQUIRE(test::poll_until([&] { return lane_threads().size() == cpus.size(); }));
      for (const auto& [i, tid] : lane_threads()) CHECK(affinity_of(tid) == cpus);
    }
    REQUIRE(test::poll_until([&] { return lane_threads().empty(); }));  // the first engine's lanes are gone
    auto e = start_with_lanes(1, true);
    REQUIRE(test::poll_until([&] { return lane_threads().size() == 1; }));
    CHECK(affinity_of(lane_threads().begin()->second) == cpus);
  }

  TEST_CASE("the nominal plan counts the cores the starting thread may use (taskset, cpuset), not the machine's") {
    const auto cpus = process_cpus();
    if (skip_single_core(cpus)) return;
    auto res = test::resources(test::base_config());
    cpu_set_t all, one;
    REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof all, &all) == 0);
    CPU_ZERO(&one);
    CPU_SET(cpus.back(), &one);
    REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
    auto plan = plan_this_machine(*res->recognizer, std::chrono::milliseconds(0));
    REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof all, &all) == 0);
    REQUIRE(plan.has_value());
    CHECK(plan->n_lanes() == 1);
    CHECK(plan->devices[0].units == 1);
    auto whole = plan_this_machine(*res->recognizer, std::chrono::milliseconds(0));
    REQUIRE(whole.has_value());
    CHECK(whole->n_lanes() == static_cast<int>(cpus.size()));
  }
}
