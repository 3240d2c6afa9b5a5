#pragma once
/// Why the engine refused to open a channel, as a code set where the refusal is made (the
/// supervisor, or a caller whose request to it failed). The network layer maps it to a status
/// (HTTP 503 + Retry-After or 400; WebSocket close "try later" or "unsupported") without reading
/// the human-readable reason, which stays free to change wording.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace sluice::actors {

enum class refusal : uint8_t {
  none = 0,           ///< not refused (open_reply::ok)
  overloaded = 1,     ///< max_channels reached, or ready audio waits past max_queue_wait_ms: retry later
  shutting_down = 2,  ///< the engine is draining: retry later (elsewhere)
  unavailable = 3,    ///< the supervisor did not answer in time: retry later
  bad_request = 4,    ///< the request itself is wrong (codec, rate, hotwords, ...): retrying will not help
  internal = 5,       ///< the engine could not build the channel for a reason not the request's (its config, a library)
};

/// Whether the same request may succeed later (overloaded, shutting_down, unavailable).
constexpr bool retryable(refusal r) {
  return r == refusal::overloaded || r == refusal::shutting_down || r == refusal::unavailable;
}

/// The refusal for a channel whose pipeline could not be built with error code `c`: the
/// request's fault (bad_request) for what the caller sent, internal for the engine's own.
constexpr refusal refusal_of(errc c) {
  switch (c) {
    case errc::invalid_argument:
    case errc::truncated:
    case errc::corrupt:
    case errc::unsupported:
    case errc::limit_exceeded: return refusal::bad_request;
    case errc::invalid_config:
    case errc::io:
    case errc::unavailable:
    case errc::internal: return refusal::internal;
  }
  return refusal::internal;
}

/// The HTTP status a refusal answers a request with: 503 (with Retry-After) when retrying may
/// help, 400 for a bad request, 500 for the engine's own failure.
constexpr int http_status(refusal r) {
  if (retryable(r)) return 503;
  return r == refusal::bad_request ? 400 : 500;
}

/// One word per code, for logs and error bodies ("overloaded", "bad_request", ...).
constexpr std::string_view refusal_name(refusal r) {
  switch (r) {
    case refusal::none: return "none";
    case refusal::overloaded: return "overloaded";
    case refusal::shutting_down: return "shutting_down";
    case refusal::unavailable: return "unavailable";
    case refusal::bad_request: return "bad_request";
    case refusal::internal: return "internal";
  }
  return "unknown";
}

/// refusal_name as a string (CAF prints message fields with a to_string returning one).
inline std::string to_string(refusal r) { return std::string(refusal_name(r)); }

}  // namespace sluice::actors
