// The placement plan is a pure function of measured device speeds: lanes where the measured
// speed-up says they pay off, every lane's share of the work in proportion to its speed, every
// expert local with one device, and experts split over several devices in proportion to speed.
// Expected values are worked out by hand from the devices given (comments show the arithmetic).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "moe/placement/placement_plan.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

double sum_shares(const placement_plan& p) {
  double s = 0;
  for (const auto& l : p.lanes) s += l.share;
  return s;
}

}  // namespace

TEST_SUITE("placement plan") {
  TEST_CASE("a CPU-only machine: one lane per core that pays off, every expert local") {
    // 16 cores, 100 frames/s on one, 1500 on all: a speed-up of 15 -> 15 lanes of 100 each.
    auto p = plan_placement({{"cpu", "cpu", 16, 100.0, 1500.0}}, 64);
    REQUIRE(p.has_value());
    CHECK(p->n_lanes() == 15);
    CHECK(p->lanes_per_device == std::vector<int>{15});
    CHECK(p->experts_local);
    CHECK(p->experts_per_device == std::vector<int32_t>{64});
    for (const auto& l : p->lanes) {
      CHECK(l.device == 0);
      CHECK(l.share == doctest::Approx(1.0 / 15));
      CHECK(l.speed == doctest::Approx(100.0));
    }
    CHECK(p->total_speed == doctest::Approx(1500.0));
  }

  TEST_CASE("cores that do not speed the work up get no lane, and there is always one") {
    // 8 cores but all together only twice as fast as one (memory bound, or shared): 2 lanes.
    CHECK(plan_placement({{"cpu", "cpu", 8, 100.0, 200.0}}, 64)->n_lanes() == 2);
    // Slower together than alone (a busy machine): still one lane.
    CHECK(plan_placement({{"cpu", "cpu", 2, 100.0, 80.0}}, 64)->n_lanes() == 1);
    // Never more lanes than units, whatever the measurement says.
    CHECK(plan_placement({{"cpu", "cpu", 4, 100.0, 900.0}}, 64)->n_lanes() == 4);
  }

  TEST_CASE("heterogeneous devices get work and experts in proportion to measured speed") {
    // Two GPUs, one three times as fast: shares 3/4 and 1/4; 64 experts -> 48 and 16.
    auto p = plan_placement({{"cuda:0", "gpu", 1, 3000.0, 3000.0}, {"cuda:1", "gpu", 1, 1000.0, 1000.0}}, 64);
    REQUIRE(p.has_value());
    CHECK(p->n_lanes() == 2);
    CHECK_FALSE(p->experts_local);
    CHECK(p->device_share[0] == doctest::Approx(0.75));
    CHECK(p->device_share[1] == doctest::Approx(0.25));
    CHECK(p->experts_per_device == std::vector<int32_t>{48, 16});

    // A 4-core CPU (4 lanes of 100) beside a GPU of 1200: 1600 in all; each CPU lane takes
    // 100/1600, the GPU 1200/1600 = 3/4; experts 16 on the CPU, 48 on the GPU.
    auto mixed = plan_placement({{"cpu", "cpu", 4, 100.0, 400.0}, {"cuda:0", "gpu", 1, 1200.0, 1200.0}}, 64);
    REQUIRE(mixed.has_value());
    CHECK(mixed->lanes_per_device == std::vector<int>{4, 1});
    for (int i = 0; i < 4; ++i) CHECK(mixed->lanes[static_cast<std::size_t>(i)].share == doctest::Approx(1.0 / 16));
    CHECK(mixed->lanes[4].share == doctest::Approx(0.75));
    CHECK(mixed->experts_per_device == std::vector<int32_t>{16, 48});
    CHECK(sum_shares(*mixed) == doctest::Approx(1.0));
  }

  TEST_CASE("experts that do not divide evenly go by largest remainder and none is lost") {
    // Three equal devices, 64 experts: 21.33 each -> 22, 21, 21 (the first takes the extra one).
    auto p = plan_placement({{"a", "gpu", 1, 1.0, 1.0}, {"b", "gpu", 1, 1.0, 1.0}, {"c", "gpu", 1, 1.0, 1.0}}, 64);
    REQUIRE(p.has_value());
    CHECK(p->experts_per_device == std::vector<int32_t>{22, 21, 21});
    // A device 100x slower still holds at least one expert while there are enough.
    auto skew = plan_placement({{"fast", "gpu", 1, 1000.0, 1000.0}, {"slow", "gpu", 1, 1.0, 1.0}}, 8);
    REQUIRE(skew.has_value());
    CHECK(skew->experts_per_device == std::vector<int32_t>{7, 1});
    CHECK(std::accumulate(skew->experts_per_device.begin(), skew->experts_per_device.end(), 0) == 8);
  }

  TEST_CASE("no device, no units or no measured speed is refused with the reason") {
    CHECK(plan_placement({}, 64).error().message.find("no device") != std::string::npos);
    CHECK(plan_placement({{"cpu", "cpu", 0, 1.0, 1.0}}, 64).error().message.find("units") != std::string::npos);
    CHECK_FALSE(plan_placement({{"cpu", "cpu", 2, 0.0, 1.0}}, 64).has_value());
    CHECK_FALSE(plan_placement({{"cpu", "cpu", 2, 1.0, std::numeric_limits<double>::quiet_NaN()}}, 64).has_value());
    CHECK(plan_placement({{"cpu", "cpu", 2, 1.0, -3.0}}, 64).error().code == errc::invalid_argument);
  }
}
