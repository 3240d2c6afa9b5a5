#pragma once
/// Monotonic time as integers: the clock RTP/RTCP timing (jitter, DLSR), the RTP rate limiters
/// and the switch calls' speed cap read their `now_us` from. Only differences between two
/// readings mean anything.

#include <chrono>
#include <cstdint>

namespace sluice::net {

inline int64_t steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline int64_t steady_ms() { return steady_us() / 1000; }

}  // namespace sluice::net
