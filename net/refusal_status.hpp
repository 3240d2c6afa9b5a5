#pragma once
/// How a refused channel (actors::refusal, set where the refusal is made) closes a WebSocket
/// session: the error code word the client sees and the close code. Decided on the code only,
/// never on the text of the reason.

#include <string_view>

#include "actors/refusal.hpp"
#include "net/ws_protocol.hpp"

namespace sluice::net {

/// "overloaded" (retry later), "bad_request" or "internal".
constexpr std::string_view ws_error_of(actors::refusal r) {
  if (actors::retryable(r)) return "overloaded";
  return r == actors::refusal::bad_request ? "bad_request" : "internal";
}

/// 1013 try later when retrying may help, 1003 for a bad request, 1011 for the engine's failure.
constexpr ws_close ws_close_of(actors::refusal r) {
  if (actors::retryable(r)) return ws_close::try_later;
  return r == actors::refusal::bad_request ? ws_close::unsupported : ws_close::internal;
}

}  // namespace sluice::net
