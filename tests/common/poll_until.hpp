#pragma once
/// @file poll_until.hpp
/// The one bounded poll loop of the test suites, for state the engine or a service publishes
/// only periodically from its own threads (metrics reports every report_ms, call records): the
/// condition is what is waited on, the pause only paces the poll. Not for ordering messages
/// (use CAF's test coordinator or an explicit reply for that).

#include <chrono>
#include <thread>

namespace sluice::test {

/// Calls `done()` until it returns true or `limit` passes; returns whether it held.
template <class F>
bool poll_until(F&& done, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  constexpr auto pace = std::chrono::milliseconds(20);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(pace);
  }
}

}  // namespace sluice::test
