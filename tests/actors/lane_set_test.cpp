// lane_set: per-utterance placement on the lane with the least outstanding work.
#include "actors/lane_set.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

using namespace sluice::actors;

TEST_SUITE("lane set") {
  TEST_CASE("place takes the slot with the least claimed work, the lowest index on a tie, and claims at once") {
    lane_set s(3);
    auto p0 = s.place(50);
    CHECK(p0.index == 0);  // all empty: the first
    auto p1 = s.place(50);
    CHECK(p1.index == 1);  // slot 0 holds 50 now
    auto p2 = s.place(10);
    CHECK(p2.index == 2);
    CHECK(s.load(0) == 50);
    CHECK(s.load(1) == 50);
    CHECK(s.load(2) == 10);
    CHECK(s.place(5).index == 2);  // 10 < 50
    CHECK(s.load(2) == 15);
    s.add(0, -50);  // slot 0's work answered
    CHECK(s.load(0) == 0);
    CHECK(s.place(1).index == 0);
    s.add(1, 200);
    s.add(0, 100);
    CHECK(s.place(0).index == 2);  // 15 is now the least
  }

  TEST_CASE("lanes of unequal measured speed get work in proportion to it: 3 to 1 for speeds 300 and 100") {
    lane_set s(2, false, {300.0, 100.0});
    CHECK(s.speed(0) == doctest::Approx(1.0));
    CHECK(s.speed(1) == doctest::Approx(1.0 / 3.0));
    // 400 utterances of 10 frames, none released. Each goes where it would finish first, so the
    // two lanes' finish times (load / speed) never differ by more than one claim's time on the
    // slow lane: |L0 - 3 L1| <= 30 with L0 + L1 = 4000, i.e. L1 = 1000 +- 7.5 frames.
    int on_slow = 0;
    for (int i = 0; i < 400; ++i) on_slow += s.place(10).index == 1 ? 1 : 0;
    CHECK(s.load(0) + s.load(1) == 4000);
    CHECK(on_slow >= 99);
    CHECK(on_slow <= 101);
    CHECK(std::abs(static_cast<double>(s.load(0)) - 3.0 * static_cast<double>(s.load(1))) <= 30.0);
  }

  TEST_CASE("an idle slow lane is passed over for an idle fast one, whatever their order") {
    lane_set s(2, false, {100.0, 400.0});
    CHECK(s.place(50).index == 1);  // 50/1 on the fast lane against 50/0.25 = 200 on the slow one
    CHECK(s.place(50).index == 1);  // 100 against 200
    CHECK(s.place(50).index == 1);  // 150 against 200
    CHECK(s.place(50).index == 0);  // 200 against 200: a tie, the lowest index
    CHECK(s.load(0) == 50);
    CHECK(s.load(1) == 150);
  }

  TEST_CASE("speeds that are missing, of the wrong count, zero, negative or not finite leave every lane equal") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (const auto& speeds : std::vector<std::vector<double>>{
             {}, {1.0, 2.0}, {1.0, 0.0, 2.0}, {1.0, -3.0, 2.0}, {1.0, nan, 2.0}, {1.0, inf, 2.0}}) {
      CAPTURE(speeds.size());
      lane_set s(3, false, speeds);
      for (std::size_t i = 0; i < 3; ++i) CHECK(s.speed(i) == 1.0);
      CHECK(s.place(10).index == 0);
      CHECK(s.place(10).index == 1);
      CHECK(s.place(10).index == 2);
      CHECK(s.place(10).index == 0);
    }
  }

  TEST_CASE("the handle returned is the one set in the slot, and a replaced one is returned after set") {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    // Only the handles' identity is checked here: no message is sent to them.
    auto a = caf::actor_cast<compute_actor_type>(sys.spawn([] { return caf::behavior{[](int) {}}; }));
    auto b = caf::actor_cast<compute_actor_type>(sys.spawn([] { return caf::behavior{[](int) {}}; }));
    lane_set s(2);
    CHECK(s.size() == 2);
    CHECK(s.set(0, a));
    CHECK(s.set(1, b));
    CHECK_FALSE(s.set(2, a));  // no such slot: refused, nothing thrown
    CHECK(s.place(1).lane == a);
    CHECK(s.place(1).lane == b);
    CHECK(s.set(0, b));
    CHECK(s.at(0) == b);
    CHECK(s.place(0).lane == b);  // slot 0 again (tie, lowest index): its new actor
    CHECK_FALSE(s.at(5));
    auto one = lane_set::of(a);
    CHECK(one->size() == 1);
    CHECK(one->place(7).lane == a);
    CHECK(one->load(0) == 7);
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
  }

  TEST_CASE("claims from many threads at once: every slot gets work and all of it is released to zero") {
    constexpr int threads = 8, per_thread = 2000;
    lane_set s(4);
    std::vector<std::vector<std::size_t>> placed(threads);
    {
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
          for (int i = 0; i < per_thread; ++i) placed[static_cast<std::size_t>(t)].push_back(s.place(3).index);
        });
      for (auto& t : ts) t.join();
    }
    std::vector<int64_t> per_slot(4, 0);
    for (const auto& v : placed)
      for (auto i : v) per_slot[i] += 3;
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(s.load(i) == per_slot[i]);  // no claim lost in a race
      // Least-loaded: every slot gets a fair part (16,000 claims; at least half of a quarter each).
      CHECK(per_slot[i] / 3 > threads * per_thread / 8);
    }
    {
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
          for (auto i : placed[static_cast<std::size_t>(t)]) s.add(i, -3);
        });
      for (auto& t : ts) t.join();
    }
    for (std::size_t i = 0; i < 4; ++i) CHECK(s.load(i) == 0);
  }
}
