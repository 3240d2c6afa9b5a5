// net/auth/failure_limiter: the failed-authentication back-off on its own, with explicit time
// points (no clock, no sleeps): the count within the window, the lockout and its end, other
// addresses untouched, and the memory bound.
#include <doctest/doctest.h>

#include "net/auth/failure_limiter.hpp"

using namespace sluice;
using net::auth::failure_limiter;
using namespace std::chrono_literals;

namespace {

config::auth_config limits(int failures, int window_s, int lockout_s, int tracked = 100) {
  config::auth_config c;
  c.max_failures = failures;
  c.failure_window_s = window_s;
  c.lockout_s = lockout_s;
  c.max_tracked_clients = tracked;
  return c;
}

}  // namespace

TEST_SUITE("auth") {
  TEST_CASE("failure limiter: the k-th invalid key within the window locks the address out for lockout_s") {
    failure_limiter f(limits(3, 60, 300));
    const failure_limiter::clock::time_point t0{};
    CHECK_FALSE(f.record_failure("10.0.0.1", t0));
    CHECK_FALSE(f.record_failure("10.0.0.1", t0 + 1s));
    CHECK_FALSE(f.retry_after("10.0.0.1", t0 + 2s).has_value());
    CHECK(f.record_failure("10.0.0.1", t0 + 2s));
    CHECK(f.lockouts() == 1);
    CHECK(f.retry_after("10.0.0.1", t0 + 2s) == 300);
    // The text HTTP (429) and RTSP (503) send while locked out names the limit and the wait.
    CHECK(f.lockout_message(300) ==
          "too many invalid API keys from this address (auth.max_failures = 3 within 60 s): retry in 300 s");
    CHECK(f.retry_after("10.0.0.1", t0 + 2s + 299s + 500ms) == 1);  // rounded up, never 0
    CHECK_FALSE(f.retry_after("10.0.0.1", t0 + 302s).has_value());
    CHECK_FALSE(f.retry_after("10.0.0.2", t0 + 2s).has_value());  // another address
    // Failures while locked out neither count nor extend the lockout.
    CHECK_FALSE(f.record_failure("10.0.0.1", t0 + 100s));
    CHECK(f.retry_after("10.0.0.1", t0 + 100s) == 202);
    // After the lockout it starts from zero.
    CHECK_FALSE(f.record_failure("10.0.0.1", t0 + 303s));
    CHECK_FALSE(f.record_failure("10.0.0.1", t0 + 304s));
    CHECK(f.record_failure("10.0.0.1", t0 + 305s));
    CHECK(f.lockouts() == 2);
  }

  TEST_CASE("failure limiter: failures spread wider than the window never lock out - max_failures 0 is off") {
    failure_limiter f(limits(3, 10, 300));
    const failure_limiter::clock::time_point t0{};
    for (int i = 0; i < 20; ++i) CHECK_FALSE(f.record_failure("10.0.0.1", t0 + std::chrono::seconds(6 * i)));
    CHECK(f.lockouts() == 0);
    failure_limiter off(limits(0, 10, 300));
    CHECK_FALSE(off.enabled());
    for (int i = 0; i < 20; ++i) CHECK_FALSE(off.record_failure("10.0.0.1", t0));
    CHECK_FALSE(off.retry_after("10.0.0.1", t0).has_value());
  }

  TEST_CASE("failure limiter: at most max_tracked_clients addresses are remembered") {
    failure_limiter f(limits(2, 60, 300, 8));
    const failure_limiter::clock::time_point t0{};
    for (int i = 0; i < 100; ++i) f.record_failure("10.0.1." + std::to_string(i), t0 + std::chrono::milliseconds(i));
    CHECK(f.tracked() <= 8);
    // A locked-out address is still locked out after others come and go while it is among the
    // newest.
    CHECK(f.record_failure("10.0.1.99", t0 + 1s));
    CHECK(f.retry_after("10.0.1.99", t0 + 2s).has_value());
  }
}
