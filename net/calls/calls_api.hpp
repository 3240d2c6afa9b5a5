#pragma once
/// The HTTP side of calls (routes of net/http_session.cpp; the JSON of call_json.hpp):
///   GET /v1/calls[?limit=N][&live=1][&tenant=T]   {"calls": [a call in a list, ...]}, newest
///       first; limit 1..max_list_limit (default default_list_limit); live=1: only live calls;
///       tenant: admin only (others see their own calls anyway)
///   GET /v1/calls/{id}                            the whole call
///   WS  /v1/events[?call=ID][&tenant=T]           live updates (net/events_session.hpp)
/// Access: scope read (net/auth/gate.hpp). A tenant's key sees only that tenant's calls: another
/// tenant's call is 404 exactly as an unknown one (its existence is not revealed); admin keys and
/// the anonymous principal see every call. ?tenant= from a non-admin naming another tenant: 403.

#include <cstddef>
#include <string>

#include "config/error.hpp"
#include "net/auth/principal.hpp"
#include "net/calls/call_registry.hpp"

namespace sluice::net::calls {

inline constexpr std::size_t default_list_limit = 100;
inline constexpr std::size_t max_list_limit = 100000;

/// An HTTP answer: status and JSON body.
struct api_reply {
  int status = 200;
  std::string body;
};

/// True when `who` may see `c`.
bool visible_to(const call_record& c, const auth::principal& who);

/// GET /v1/calls with the request target `target` (its query string is read).
api_reply list_calls(const call_registry& reg, const auth::principal& who, const std::string& target);
/// GET /v1/calls/{id}.
api_reply get_call(const call_registry& reg, const auth::principal& who, const std::string& id);

/// The subscription filter of WS /v1/events?call=&tenant= for `who`; errc::invalid_argument
/// (answer 400) for a malformed query, errc::unsupported (answer 403) when a non-admin asks for
/// another tenant's calls.
result<subscription_filter> events_filter(const auth::principal& who, const std::string& target);

}  // namespace sluice::net::calls
